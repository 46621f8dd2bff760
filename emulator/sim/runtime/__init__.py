"""A topology wired on the loop (the pair is its 1x1 case), its live per-element state, and the prefill backend."""
