"""Request accounting: every request that arrived is completed, in flight or rejected (with a
reason). The emulator counts arrivals, completions and rejections with counters and the
in-flight term by looking into every queue, instance, link and batch; `lost` is what is left
over, a measurement, so a request that a live change or an incident dropped on the floor shows
up as lost != 0 and fails the run (AccountingError)."""

from __future__ import annotations

from dataclasses import dataclass, field


class AccountingError(RuntimeError):
    """arrived != completed + in flight + rejected: a request was lost unaccounted."""


@dataclass(frozen=True)
class Accounting:
    arrived: int
    completed: int
    in_flight: int
    rejected: dict[str, int] = field(default_factory=dict)  # reason -> requests

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())

    @property
    def lost(self) -> int:
        """The measured imbalance: arrived - completed - in flight - rejected (0 when sound)."""
        return self.arrived - self.completed - self.in_flight - self.rejected_total

    @property
    def balanced(self) -> bool:
        return self.lost == 0

    def check(self) -> None:
        if not self.balanced:
            raise AccountingError(
                f"accounting broken: arrived {self.arrived} != completed {self.completed} + "
                f"in flight {self.in_flight} + rejected {self.rejected_total} "
                f"({self.lost:+d} unaccounted)")

    def to_dict(self) -> dict:
        # lost_reasons: nothing is dropped knowingly, so the only reason is the imbalance
        return {"arrived": self.arrived, "completed": self.completed,
                "in_flight": self.in_flight, "rejected": self.rejected_total,
                "rejected_reasons": dict(sorted(self.rejected.items())),
                "lost": self.lost,
                "lost_reasons": {"unaccounted": self.lost} if self.lost else {}}
