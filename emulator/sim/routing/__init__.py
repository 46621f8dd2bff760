"""Where a request prefills: the site policies (threshold, lp, best-bandwidth), cache-aware routing and the prefix caches it reads."""
