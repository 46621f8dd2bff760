"""One request's record, kept small: thousands are alive at once and millions pass per run."""

from __future__ import annotations


class Request:
    __slots__ = ("rid", "arrival", "length", "out_len", "hash_ids", "session", "incr", "stage",
                 "service", "kv", "t_enq", "t_first", "timer", "worker", "route", "dest")

    def __init__(self, rid: int, arrival: float, length: float, out_len: int,
                 hash_ids: list[int] | None = None, session: object = None):
        self.rid = rid
        self.arrival = arrival  # seconds (virtual)
        self.length = length  # input tokens
        self.out_len = out_len  # output tokens
        self.hash_ids = hash_ids  # prefix-block ids (Mooncake traces), for prefix caches
        self.session = session
        self.incr = length  # tokens left to prefill after the cached prefix (set by the router)
        self.stage = ""  # the prefill stage the router chose
        self.service = 0.0  # prefill seconds on that stage
        self.kv = 0.0  # KV bytes (the whole prompt's, for transfer and decode memory)
        self.t_enq = arrival  # when it entered its current stage's queue
        self.t_first = 0.0  # first token (end of the first decode step)
        self.timer = None  # decode completion timer
        self.worker = None  # the decode instance holding it
        self.route = None  # the cache-aware routing decision, when a prefix cache is attached
        # dest: the Region it belongs to, set only in a topology (a site's queue is shared)

    def __repr__(self) -> str:
        return f"Request({self.rid}, t={self.arrival:.3f}, l={self.length:.0f}, {self.stage})"
