"""The ground every other part stands on: the virtual-time event loop, the request record and per-request costs."""
