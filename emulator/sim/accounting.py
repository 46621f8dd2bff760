"""Request accounting: every request that arrived is completed, in flight, rejected (with a
reason) or lost (with a reason). The emulator counts the left side with counters and the
in-flight term by looking into every queue, instance, link and batch, so the check catches a
request that a live change or an incident dropped on the floor."""

from __future__ import annotations

from dataclasses import dataclass, field


class AccountingError(RuntimeError):
    """arrived != completed + in flight + rejected + lost: a request was lost unaccounted."""


@dataclass(frozen=True)
class Accounting:
    arrived: int
    completed: int
    in_flight: int
    rejected: dict[str, int] = field(default_factory=dict)  # reason -> requests
    lost: dict[str, int] = field(default_factory=dict)  # reason -> requests

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())

    @property
    def lost_total(self) -> int:
        return sum(self.lost.values())

    @property
    def balanced(self) -> bool:
        return self.arrived == (self.completed + self.in_flight + self.rejected_total
                                + self.lost_total)

    def check(self) -> None:
        if not self.balanced:
            raise AccountingError(
                f"accounting broken: arrived {self.arrived} != completed {self.completed} + "
                f"in flight {self.in_flight} + rejected {self.rejected_total} + lost "
                f"{self.lost_total}")

    def to_dict(self) -> dict:
        return {"arrived": self.arrived, "completed": self.completed,
                "in_flight": self.in_flight, "rejected": self.rejected_total,
                "rejected_reasons": dict(sorted(self.rejected.items())),
                "lost": self.lost_total, "lost_reasons": dict(sorted(self.lost.items()))}
