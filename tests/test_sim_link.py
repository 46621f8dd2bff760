"""The link's fluid model against closed forms: transfer times, fair sharing, capacity changes,
layer-wise pipelining, the token bucket and propagation delay."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator.sim.core.loop import VirtualTimeLoop
from emulator.sim.stages.link import Link

MB = 1e6


def make(capacity=1000 * MB, **kw):
    loop = VirtualTimeLoop()
    return loop, Link(loop, "test", capacity, **kw)


def flow(loop, link, size, prod_time=0.0, tag=None, log=None):
    log = log if log is not None else []
    link.open(size, prod_time, lambda f: log.append(("sent", tag, loop.time())),
              lambda p: log.append(("delivered", p, loop.time())), tag)
    return log


def times(log, kind):
    return [t for k, _, t in log if k == kind]


def test_one_flow_takes_size_over_rate_plus_latency():
    loop, link = make(latency=0.05)
    log = flow(loop, link, 800 * MB, tag="a")
    loop.run_until(10)
    assert times(log, "sent") == [pytest.approx(0.8, abs=1e-12)]
    assert times(log, "delivered") == [pytest.approx(0.85, abs=1e-12)]


def test_two_concurrent_flows_each_get_half():
    loop, link = make()
    log = []
    flow(loop, link, 800 * MB, tag="a", log=log)
    flow(loop, link, 800 * MB, tag="b", log=log)
    assert [link.rate(f) for f in link.flows.values()] == [500 * MB, 500 * MB]
    loop.run_until(10)
    assert times(log, "sent") == [pytest.approx(1.6, abs=1e-12)] * 2


def test_late_joiner_shares_then_the_first_speeds_up_again():
    loop, link = make()
    log = []
    flow(loop, link, 800 * MB, tag="a", log=log)
    loop.call_at(0.4, lambda: flow(loop, link, 100 * MB, tag="b", log=log))
    loop.run_until(10)
    # a: 400 MB alone, then 500 MB/s shared until b's 100 MB are done (0.2 s), then alone
    sent = {tag: t for k, tag, t in log if k == "sent"}
    assert sent["b"] == pytest.approx(0.6, abs=1e-12)
    assert sent["a"] == pytest.approx(0.9, abs=1e-12)


def test_capacity_change_mid_flow_shows_in_the_finish_time_exactly():
    loop, link = make()
    log = flow(loop, link, 800 * MB)
    loop.call_at(0.4, link.set_capacity, 250 * MB)  # 400 MB left at 250 MB/s
    loop.run_until(10)
    assert times(log, "sent") == [pytest.approx(0.4 + 1.6, abs=1e-12)]


def test_outage_holds_flows_and_recovery_resumes_them():
    loop, link = make()
    log = flow(loop, link, 800 * MB)
    loop.call_at(0.2, link.set_capacity, 0.0)
    loop.call_at(5.2, link.set_capacity, 1000 * MB)
    loop.run_until(20)
    assert times(log, "sent") == [pytest.approx(5.8, abs=1e-12)]


def test_pipelined_flow_with_ample_bandwidth_ends_with_its_prefill():
    loop, link = make()
    log = flow(loop, link, 800 * MB, prod_time=2.0)  # produces 400 MB/s < 1000 MB/s
    loop.run_until(10)
    assert times(log, "sent") == [2.0]
    assert link.totals(10)[0] == pytest.approx(800 * MB)


def test_pipelined_flows_with_scarce_bandwidth_are_paced_by_the_link():
    loop, link = make()
    log = []
    for tag in "abc":  # 3 x 400 MB/s of production on a 1000 MB/s link
        flow(loop, link, 800 * MB, prod_time=2.0, tag=tag, log=log)
    assert link.saturated
    loop.run_until(10)
    assert times(log, "sent") == [pytest.approx(2.4, abs=1e-9)] * 3


def test_a_flow_never_sends_what_prefill_has_not_produced():
    loop, link = make()
    log = []
    flow(loop, link, 800 * MB, prod_time=2.0, tag="slow", log=log)  # wants 400 MB/s
    flow(loop, link, 3000 * MB, tag="bulk", log=log)  # takes whatever is left
    f_slow = next(f for f in link.flows.values() if f.payload == "slow")
    f_bulk = next(f for f in link.flows.values() if f.payload == "bulk")
    assert link.rate(f_slow) == 400 * MB and link.rate(f_bulk) == 600 * MB
    loop.run_until(20)
    sent = {tag: t for k, tag, t in log if k == "sent"}
    assert sent["slow"] == 2.0
    assert sent["bulk"] == pytest.approx(2.0 + (3000 - 1200) / 1000, abs=1e-9)


def test_a_flow_that_fell_behind_catches_up_then_follows_production():
    loop, link = make(600 * MB)
    log = []
    flow(loop, link, 800 * MB, prod_time=2.0, tag="p", log=log)  # wants 400 MB/s
    flow(loop, link, 300 * MB, tag="bulk", log=log)
    loop.run_until(20)
    # 300 MB/s each until bulk is done at 1.0 s (p has sent 300 of 400 MB produced); then p
    # runs at 600 MB/s and closes its 100 MB gap at (600 - 400) MB/s in 0.5 s, then is paced
    sent = {tag: t for k, tag, t in log if k == "sent"}
    assert sent["bulk"] == pytest.approx(1.0, abs=1e-9)
    assert sent["p"] == pytest.approx(2.0, abs=1e-9)


def test_token_bucket_lets_a_burst_through_at_peak_then_the_nominal_rate():
    loop, link = make(1000 * MB, burst=500 * MB, peak=2000 * MB)
    log = flow(loop, link, 2000 * MB)
    loop.run_until(20)
    # 2000 MB/s drains 500 MB of tokens in 0.5 s (1000 MB sent), then 1000 MB at 1000 MB/s
    assert times(log, "sent") == [pytest.approx(1.5, abs=1e-9)]
    loop.call_at(21.0, lambda: flow(loop, link, 1000 * MB, log=log))  # bucket refilled
    loop.run_until(40)
    assert times(log, "sent")[1] == pytest.approx(21.5, abs=1e-9)


def test_cancel_frees_the_share_for_the_others():
    loop, link = make()
    log = []
    flow(loop, link, 800 * MB, tag="a", log=log)
    flow(loop, link, 800 * MB, tag="b", log=log)
    victim = next(f for f in link.flows.values() if f.payload == "b")
    loop.call_at(0.4, link.cancel, victim)
    loop.run_until(10)
    assert [(tag, t) for k, tag, t in log if k == "sent"] == [("a", pytest.approx(1.0))]


def test_metrics_bytes_in_flight_and_queued():
    loop, link = make(latency=1.0)
    flow(loop, link, 800 * MB, prod_time=1.0)
    flow(loop, link, 800 * MB, prod_time=1.0)  # 1600 MB/s of production on 1000 MB/s
    loop.run_until(0.5)
    assert link.queued_bytes(0.5) == pytest.approx(2 * 400 * MB - 500 * MB)
    assert link.bytes_in_flight(0.5) == pytest.approx(1600 * MB - 500 * MB)
    loop.run_until(1.7)  # both sent at 1.6 s, on the wire until 2.6 s
    assert link.bytes_in_flight(1.7) == pytest.approx(1600 * MB)
    loop.run_until(3.0)
    assert link.bytes_in_flight(3.0) == 0


# --- bookkeeping the engine reads (accounting, metrics): each pinned to its closed form ------
def test_capacity_must_be_non_negative_and_zero_is_an_outage():
    loop = VirtualTimeLoop()
    with pytest.raises(ValueError, match=r"^up: capacity must be >= 0, got -1$"):
        Link(loop, "up", -1)
    link = Link(loop, "up", 0.0)
    with pytest.raises(ValueError, match=r"^up: capacity must be >= 0, got nan$"):
        link.set_capacity(float("nan"))
    log = flow(loop, link, 100 * MB)
    loop.run_until(5)
    assert log == [] and link.remaining(next(iter(link.flows.values()))) == 100 * MB


def test_callbacks_get_the_flow_and_the_payload_and_counters_follow_the_wire():
    loop, link = make(latency=1.0)
    got = []
    f = link.open(1000 * MB, 0.0, got.append, lambda p: got.append(("delivered", p)), "kv")
    loop.run_until(0.9)
    assert link.flows_done == 0 and link.propagating_flows == 0
    loop.run_until(1.0)
    assert got == [f] and link.flows_done == 1
    assert link.propagating_flows == 1 and link.propagating == 1000 * MB
    loop.run_until(2.0)
    assert got == [f, ("delivered", "kv")]
    assert link.propagating_flows == 0 and link.propagating == 0


def test_without_latency_delivery_is_immediate_and_nothing_propagates():
    loop, link = make()  # latency defaults to 0
    log = []
    flow(loop, link, 400 * MB, tag="a", log=log)
    flow(loop, link, 400 * MB, prod_time=2.0, tag="b", log=log)
    loop.run_until(10)
    # a: 800 MB/s (b is paced at 200 MB/s) until 0.5 s; b ends with its production at 2 s
    assert log == [("sent", "a", pytest.approx(0.5)), ("delivered", "a", pytest.approx(0.5)),
                   ("sent", "b", pytest.approx(2.0)), ("delivered", "b", pytest.approx(2.0))]
    assert link.flows_done == 2 and link.propagating_flows == 0 and link.used == 0


def test_flows_on_the_wire_are_counted_until_each_is_delivered():
    loop, link = make(latency=1.0)
    log = []
    flow(loop, link, 200 * MB, tag="a", log=log)  # sent at 0.4 s (half the link each)
    flow(loop, link, 800 * MB, tag="b", log=log)  # then alone: sent at 1.0 s
    loop.run_until(1.2)
    assert (link.propagating_flows, link.propagating) == (2, 1000 * MB)
    loop.run_until(1.5)
    assert (link.propagating_flows, link.propagating) == (1, 800 * MB)
    loop.run_until(2.5)
    assert (link.propagating_flows, link.propagating) == (0, 0)
    assert [(k, tag) for k, tag, _ in log] == [("sent", "a"), ("sent", "b"),
                                               ("delivered", "a"), ("delivered", "b")]


def test_a_paced_flow_ending_releases_only_its_own_rate():
    loop, link = make()
    flow(loop, link, 800 * MB, prod_time=2.0)  # 400 MB/s
    flow(loop, link, 800 * MB, prod_time=4.0)  # 200 MB/s
    loop.run_until(3.0)
    assert link.used == pytest.approx(200 * MB) and link.flows_done == 1
    loop.run_until(5.0)
    assert link.used == 0 and link.flows_done == 2


def test_totals_integrate_bytes_capacity_and_saturated_time():
    loop, link = make()
    flow(loop, link, 800 * MB)  # wants more than the link: saturated while it runs
    loop.run_until(0.5)
    assert link.totals(0.5) == pytest.approx((500 * MB, 500 * MB, 0.5))
    loop.run_until(3.0)
    assert link.totals(3.0) == pytest.approx((800 * MB, 3000 * MB, 0.8))
    loop.call_at(4.0, link.set_capacity, 250 * MB)
    loop.run_until(6.0)
    assert link.totals(6.0) == pytest.approx((800 * MB, 4500 * MB, 0.8))


def test_paced_flows_leave_no_backlog_and_report_what_they_have_sent():
    loop, link = make()
    flow(loop, link, 800 * MB, prod_time=2.0)  # 400 MB/s, within the link: paced
    f = next(iter(link.flows.values()))
    loop.run_until(0.5)
    assert link.used == 400 * MB and not link.saturated
    assert link.queued_bytes(0.5) == 0 and link.remaining(f) == pytest.approx(600 * MB)
    assert link.totals(0.5)[0] == pytest.approx(200 * MB)
    loop.run_until(3.0)
    assert link.remaining(f) == 0 and link.used == 0


def test_cancel_returns_what_was_sent_and_releases_the_rate():
    loop, link = make()
    flow(loop, link, 800 * MB, prod_time=2.0, tag="p")  # paced at 400 MB/s
    flow(loop, link, 800 * MB, prod_time=4.0, tag="q")  # paced at 200 MB/s
    p, q = link.flows.values()
    loop.run_until(1.0)
    assert link.cancel(p) == pytest.approx(400 * MB)
    assert link.used == pytest.approx(200 * MB)
    assert link.cancel(p) == 800 * MB  # no longer open: reported as all sent
    loop.run_until(2.0)
    assert link.cancel(q) == pytest.approx(400 * MB) and link.used == 0
    bulk = link.open(1000 * MB, 0.0, lambda f: None, lambda p: None, None)  # not paced
    loop.run_until(2.5)
    assert link.cancel(bulk) == pytest.approx(500 * MB)


def test_a_capacity_change_follows_to_the_mirror():
    loop, link = make()
    back = Link(loop, "back", 1000 * MB)
    link.mirror = back
    link.set_capacity(300 * MB)
    assert back.capacity == 300 * MB


def test_the_default_peak_factor_is_two():
    loop, link = make(1000 * MB, burst=500 * MB)
    log = flow(loop, link, 2000 * MB)
    loop.run_until(20)
    assert times(log, "sent") == [pytest.approx(1.5, abs=1e-9)]


# --- invariants under any mix of flows, cancels and capacity changes (hypothesis) -----------
_flow = st.tuples(st.floats(0.0, 5.0), st.floats(1.0, 2000.0),  # opens at (s), size (MB)
                  st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0]) | st.floats(0.01, 5.0),  # prod (s)
                  st.none() | st.floats(0.0, 3.0))  # cancelled this long after it opened


@settings(max_examples=150, deadline=None)
@given(flows=st.lists(_flow, min_size=1, max_size=30),
       caps=st.lists(st.tuples(st.floats(0.0, 8.0), st.floats(0.0, 2000.0)), max_size=4),
       capacity=st.floats(50.0, 2000.0), burst=st.sampled_from([0.0, 300.0]))
def test_sharing_is_max_min_fair_and_every_byte_is_accounted_for(flows, caps, capacity, burst):
    """At every event: the rates fit the capacity, a greedy flow (one taking the share) never
    gets less than a paced one, the link is full whenever a flow wants more, no flow has sent
    more than it produced, and the general mode's two lists hold every flow in the water-filling
    order. At the end: each flow not cancelled was sent once, never before its production
    ended, and the bytes the link counts are those the flows carried."""
    loop = VirtualTimeLoop()
    link = Link(loop, "prop", capacity * MB, burst=burst * MB)
    sent, cancelled, opened = {}, {}, []

    def check() -> None:
        now = loop.now
        open_flows = list(link.flows.values())
        rates = [link.rate(f) for f in open_flows]
        cap = link._current_capacity()
        assert sum(rates) <= cap * (1 + 1e-9) + 1e-6
        greedy = [f for f in open_flows if not (link._fast or f.paced)]
        if greedy:
            share = link.rate(greedy[0])
            assert all(link.rate(f) == share for f in greedy)
            assert all(f.prod_rate <= share * (1 + 1e-9) for f in open_flows if f.paced)
            if link.capacity > 0:
                assert sum(rates) == pytest.approx(cap, rel=1e-9)
        for f in open_flows:
            assert link._sent_now(f, now) <= f.produced(now) * (1 + 1e-12) + 1e-6
        if not link._fast:
            key = lambda f: (f.prod_rate, f.fid)  # noqa: E731
            assert link._paced == sorted(link._paced, key=key)
            assert link._greedy == sorted(link._greedy, key=key)
            assert {f.fid for f in link._paced + link._greedy} == set(link.flows)
            assert all(f.paced for f in link._paced) and not any(f.paced for f in link._greedy)

    def start(i: int, size: float, prod: float, cancel_after: float | None) -> None:
        f = link.open(size * MB, prod, lambda f: sent.setdefault(i, loop.now),
                      lambda p: None, i)
        opened.append((i, loop.now, prod))
        if cancel_after is not None:
            loop.call_at(loop.now + cancel_after, lambda: cancelled.setdefault(i, link.cancel(f)))
        check()

    reallocate = link._reallocate
    link._reallocate = lambda now: (reallocate(now), check())  # after every re-share
    for i, (at, size, prod, cancel_after) in enumerate(flows):
        loop.call_at(at, start, i, size, prod, cancel_after)
    for at, cap in caps:
        loop.call_at(at, lambda c=cap: (link.set_capacity(c * MB), check()))
    loop.call_at(10.0, link.set_capacity, capacity * MB)  # every outage ends
    for k in range(1, 200):
        loop.call_at(k * 0.05, check)
    loop.run_until(1e6)
    assert not link.flows
    for i, t0, prod in opened:
        if i in sent:
            assert sent[i] >= t0 + prod - 1e-9
        else:
            assert i in cancelled
    carried = sum(flows[i][1] * MB for i in sent)
    carried += sum(v for i, v in cancelled.items() if i not in sent)
    assert link.totals(loop.now)[0] == pytest.approx(carried, rel=1e-6, abs=1.0)
