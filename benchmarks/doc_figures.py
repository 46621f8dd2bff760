"""The deterministic figures the docs quote (model outputs and seeded drills), recorded into
benchmarks/results.json like a benchmark's, so that each has one source. No wall clock: the
same code gives the same figures on any machine.

    python benchmarks/doc_figures.py [--only model_modes,drills,latency_brownout]
    python benchmarks/render_docs.py
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from results import record  # noqa: E402

from emulator.model import evaluate  # noqa: E402
from emulator.optimizer import homogeneous, search  # noqa: E402
from emulator.scenario import presets  # noqa: E402
from emulator.scenario.drills import list_drills  # noqa: E402
from emulator.units import format_duration  # noqa: E402
from prfaas_tui.cli import main as cli  # noqa: E402


def _cli(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = cli(list(argv))
    if rc not in (0, 1):  # a drill whose expectation fails exits 1, with its output
        raise SystemExit(f"prfaas-tui {' '.join(argv)}: exit {rc}")
    return out.getvalue()


def model_paper() -> None:
    """The seed's toy numbers and the paper's case study, published against computed
    (`paper` mode, the paper's linearization); the published column is the paper's."""
    from emulator.model import Knobs
    from emulator.optimizer import naive, paradigms
    from emulator.units import to_gbps

    toy, paper = presets.load("toy"), presets.load("paper-case-study")
    ts = toy.system
    op = evaluate(ts, toy.knobs)
    c = op.ceilings
    lams = [evaluate(ts, Knobs(toy.knobs.t, n, 3 - n, ts.n_prfaas, ts.bandwidth)).lambda_max
            for n in range(4)]
    homo_toy = homogeneous(ts)
    ps = paper.system
    phi = [to_gbps(ps.prfaas.phi_kv(x)) for x in (1024, 8192, 32768, 131072)]
    best = search(ps, "paper").best
    par = paradigms(ps, "paper")
    d = ps.lengths

    def g(x: float) -> str:
        return f"{x:.2f}".rstrip("0").rstrip(".") if abs(x - round(x, 1)) < 1e-9 else f"{x:.2f}"

    rows = [
        ["Toy: Phi_kv(32K), Phi_kv(1K)", "3.2, 1.6 Gbps",
         f"{g(to_gbps(ts.prfaas.phi_kv(32768)))}, {g(to_gbps(ts.prfaas.phi_kv(1024)))} Gbps"],
        ["Toy: ceilings at t = 8K, N_p/N_d = 1/2", "2.0 / 4.0 / 8.0, Λ = 2.0 (PrfaaS)",
         f"{c['prfaas']:.1f} / {c['pd-p']:.1f} / {c['pd-d']:.1f}, Λ = {op.lambda_max:.1f} "
         f"({'PrfaaS' if op.binding == 'prfaas' else op.binding})"],
        ["Toy: Λ for N_p = 0..3; naive; homogeneous", "0, 2, 2, 0; 1.6; 2.13 at 4/1",
         ", ".join(g(x) for x in lams) + f"; {g(naive(ts).lambda_max)}; "
         f"{homo_toy.lambda_max:.2f} at {homo_toy.knobs.n_p}/{homo_toy.knobs.n_d}"],
        ["Table 5 Phi_kv 1K/8K/32K/128K (Gbps)", "3.61 / 3.59 / 3.19 / 2.62",
         " / ".join(f"{x:.2f}" for x in phi)],
        ["p(19.4K), E[L \\| L > 19.4K]", "0.496, ~44K",
         f"{d.p_above(19400):.4f}, {d.mean_above(19400):,.0f} tokens"],
        ["optimum t, N_prfaas/N_p/N_d", "19.4K, 4/3/5",
         f"{best.knobs.t:,.0f} tokens, {best.knobs.n_prfaas}/{best.knobs.n_p}/{best.knobs.n_d}"],
        ["Λmax PrfaaS-PD / homogeneous / naive", "3.24 / 2.11 / 2.45",
         " / ".join(f"{par[k]['lambda_max']:.2f}"
                    for k in ("prfaas-pd", "homogeneous", "naive-heterogeneous"))],
        ["vs homogeneous; at equal cost", "1.54x; ~1.15x",
         f"{par['prfaas-pd']['vs_homogeneous']:.2f}x; "
         f"{par['prfaas-pd']['per_cost_vs_homogeneous']:.2f}x"],
        ["egress at the optimum", "~13 Gbps, compute-bound",
         f"{to_gbps(best.egress()):.1f} Gbps, {best.prfaas_term}-bound"],
    ]
    record("model_paper", source="python benchmarks/doc_figures.py --only model_paper "
                                 "(checked by tests/test_model_paper.py)", computed=True,
           columns=["quantity", "published", "prfaas-tui (`paper` mode)"], rows=rows)


def model_modes() -> None:
    """The Jensen gap between `paper` and `exact` at paper-case-study's optimum."""
    s = presets.load("paper-case-study").system
    best = {m: search(s, m).best for m in ("paper", "exact")}
    exact_at = evaluate(s, best["paper"].knobs, "exact").lambda_max
    homo = {m: homogeneous(s, m) for m in ("paper", "exact")}

    def gap(e: float, p: float) -> str:
        return f"{e:.2f} vs {p:.2f} req/s ({e / p - 1:+.1%})"

    record("model_modes", source="python benchmarks/doc_figures.py --only model_modes",
           computed=True,
           values={"optimum": gap(exact_at, best["paper"].lambda_max),
                   "homogeneous": gap(homo["exact"].lambda_max, homo["paper"].lambda_max),
                   "optimum_t": f"{best['paper'].knobs.t:,.0f} tokens"})


def drills() -> None:
    """Every shipped drill (seed: the drill's): a single pair's with the scheduler and against
    a static threshold, a topology's under its routing and under the threshold policy (its
    site policies are what it compares; `drill --compare threshold`)."""
    from emulator.scenario.drills import load_drill

    rows = []
    for name, desc in list_drills():
        topology = load_drill(name).scenario.declared_topology is not None
        runs = json.loads(_cli("drill", name, "--compare",
                               "threshold" if topology else "static", "--json"))
        sc = {k: r["scorecard"] for k, r in runs.items()}
        first, second = (next(iter(sc)), "threshold") if topology else ("scheduler", "static")
        second = second if second in sc else first  # a drill routed by threshold: one run
        if topology:
            desc = f"{desc} ({first} vs {second})"

        def both(key: str, fmt, sc=sc, first=first, second=second) -> str:
            return f"{fmt(sc[first][key])} vs {fmt(sc[second][key])}"

        def dur(v):
            return "never" if v is None else ("0 s" if v == 0 else format_duration(v))

        rows.append([f"{name}: {desc}", both("ttft_p90_during", dur),
                     both("recovery_seconds", dur), both("lost", str),
                     both("slo_attainment", lambda v: f"{v:.1%}")])
    record("drills", source="python benchmarks/doc_figures.py --only drills", computed=True,
           columns=["drill", "P90 TTFT of arrivals during the incident: scheduler vs static "
                             "(a topology: as named)",
                    "time to recover", "lost", "SLO attainment"], rows=rows)


def latency_brownout() -> None:
    """What the dashboard's model panel says 15 minutes into the link-brownout drill."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "b.txt"
        _cli("snapshot", "--drill", "link-brownout", "--at", "900", "--format", "txt",
             "--out", str(path))
        screen = path.read_text(encoding="utf-8")
    ttft = re.search(r"TTFT P50 ([\d.]+) · P90 ([\d.]+) s · SLO≤(\S+) ([\d.]+)/s", screen)
    opt = re.search(r"apply it\s+SLO ([\d,]+) · (\d+/\d+) · ([\d.]+)/s", screen)
    if not (ttft and opt):
        raise SystemExit("latency_brownout: the model panel's TTFT or SLO line was not found")
    record("latency_brownout", source="python benchmarks/doc_figures.py --only latency_brownout",
           computed=True,
           values={"p90": f"P90 TTFT {ttft.group(2)} s (P50 {ttft.group(1)} s)",
                   "slo_rate": f"{ttft.group(4)} req/s within P90 <= {ttft.group(3)}",
                   "optimum": f"t {opt.group(1)} tokens, N_p/N_d {opt.group(2)} ({opt.group(3)} req/s)"})


FIGURES = {"model_paper": model_paper, "model_modes": model_modes, "drills": drills,
           "latency_brownout": latency_brownout}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(FIGURES), help="comma list of " + ", ".join(FIGURES))
    for name in ap.parse_args().only.split(","):
        FIGURES[name.strip()]()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
