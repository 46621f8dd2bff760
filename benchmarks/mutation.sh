#!/usr/bin/env bash
# Mutation score (mutmut 3) of the closed-form model, the link, the router and the knob check
# (the dashboard's, the CLI's and the engine's one validation), each against its
# own tests so that a run takes minutes on 2 cores. Results: benchmarks/RESULTS-mutation.md.
#
#   pip install -e '.[test,mutation]'
#   benchmarks/mutation.sh [model|link|router|knobs]...     # default: all four
#
# Each target runs in a scratch copy of the working tree (tracked and untracked, not ignored
# files), so the repository gets no mutants/ folder and no [mutmut] config. Prints one line per
# target (killed / survived / other / total and the score) and leaves the copy's path for
# `cd <copy> && mutmut results` / `mutmut show <mutant>`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
children=${MUTMUT_CHILDREN:-2}
command -v mutmut > /dev/null || { echo "mutation.sh: mutmut not found: pip install -e '.[test,mutation]'" >&2; exit 2; }

declare -A SOURCE=(
  [model]=emulator/model.py
  [link]=emulator/sim/stages/link.py
  [router]=emulator/sim/routing/site_policy.py
  [knobs]=emulator/scenario/knobs.py
)
declare -A TESTS=(
  [model]="tests/test_model_exact.py tests/test_model_paper.py tests/test_model_units.py tests/test_model_point.py"
  [link]="tests/test_sim_link.py"
  [router]="tests/test_sim_router.py"
  [knobs]="tests/test_paradigm_knobs.py tests/test_cli_knobs.py tests/test_sim_apply.py tests/test_knob_bounds.py"
)

targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(model link router knobs)

for target in "${targets[@]}"; do
  src=${SOURCE[$target]:?"unknown target $target (model, link, router, knobs)"}
  work=$(mktemp -d "${TMPDIR:-/tmp}/mutation-$target.XXXXXX")
  (cd "$root" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$work"
  {
    echo "[mutmut]"
    echo "source_paths = emulator"
    echo "only_mutate = $src"
    echo "also_copy ="
    echo "    presets"
    echo "    prfaas_tui"
    echo "pytest_add_cli_args = -p no:randomly -p no:xdist -p no:cacheprovider -q"
    echo "pytest_add_cli_args_test_selection ="
    for t in ${TESTS[$target]}; do [[ -e "$work/$t" ]] && echo "    $t"; done
  } > "$work/setup.cfg"
  (cd "$work" && mutmut run --max-children "$children" > mutmut.log 2>&1 || true
   mutmut export-cicd-stats > /dev/null 2>&1 || true)
  python3 - "$target" "$work" <<'PY'
import json, sys
from pathlib import Path
target, work = sys.argv[1], Path(sys.argv[2])
s = json.loads((work / "mutants" / "mutmut-cicd-stats.json").read_text())
killed, survived = s["killed"], s["survived"]
other = s["total"] - killed - survived
score = killed / (killed + survived) if killed + survived else float("nan")
print(f"{target:7s} killed {killed:4d}  survived {survived:4d}  other {other:3d}  "
      f"total {s['total']:4d}  score {score:.1%}   ({work})")
PY
done
