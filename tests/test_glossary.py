"""docs/glossary.md defines, once each, the labels the dashboard and the commands put on screen:
the labels are read from where the code defines them, so a new knob, stage, paradigm, routing
policy, counter or help term without a definition fails here."""

import re
from pathlib import Path

from emulator.paradigm import Paradigm
from emulator.sim.books.accounting import Accounting
from emulator.topology.spec import ROUTINGS
from prfaas_tui.screens.help import GLOSSARY, TOPOLOGY_KNOBS, TOPOLOGY_TERMS
from prfaas_tui.widgets.controls import KNOBS
from prfaas_tui.widgets.model_panel import STAGE_LABELS

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "glossary.md"
# an entry: "- **term**, **other term**: definition"; the bold terms before the colon are defined
ENTRY = re.compile(r"^- ((?:\*\*[^*]+\*\*(?:, )?)+):")


def defined_terms() -> list[str]:
    return [term for line in PAGE.read_text(encoding="utf-8").splitlines()
            if (m := ENTRY.match(line)) for term in re.findall(r"\*\*([^*]+)\*\*", m.group(1))]


def on_screen_labels() -> set[str]:
    labels = {k.label for k in KNOBS} | set(STAGE_LABELS.values())
    labels |= {p.label for p in Paradigm} | set(ROUTINGS)
    labels |= {name for name, _ in TOPOLOGY_KNOBS}
    for term, _ in (*GLOSSARY, *TOPOLOGY_TERMS):
        labels |= {part.strip() for part in term.split(" / ")}  # "N_p / N_d": two terms
    labels |= {key.replace("_", " ") for key in Accounting(0, 0, 0).to_dict()
               if not key.endswith("_reasons")}  # the status line's and run's counters
    return labels


def test_every_label_on_screen_is_defined():
    missing = sorted(on_screen_labels() - set(defined_terms()))
    assert missing == [], f"define these in docs/glossary.md: {missing}"


def test_each_term_is_defined_once():
    terms = defined_terms()
    assert len(terms) > 50
    assert sorted({t for t in terms if terms.count(t) > 1}) == []


def test_the_glossary_is_linked():
    for page in ("README.md", "docs/dashboard.md"):
        assert "glossary.md" in (ROOT / page).read_text(encoding="utf-8"), page
