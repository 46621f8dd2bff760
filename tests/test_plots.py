"""The live charts' small text helpers."""


def test_queue_label_keeps_the_number_when_the_cell_is_narrow():
    from prfaas_tui.widgets.plots import queue_label

    assert queue_label("PD-P", "3", 40) == "PD-P queue 3"
    assert queue_label("PrfaaS", "12", 12) == "PrfaaS 12"  # 80 columns: a 12-wide cell
    assert queue_label("PrfaaS", "1", 0) == "PrfaaS queue 1"  # not laid out yet: the full form
