"""The scheduler: the pair's two timescales (routing threshold, role conversions) and a topology's periodic policy re-solve."""
