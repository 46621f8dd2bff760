"""Bounded-memory bookkeeping a run keeps as it goes: request accounting, histograms and metric totals, immutable snapshots and the incident timeline."""
