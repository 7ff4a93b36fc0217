"""The writes-per-client chart's layout: one column per day, stacked per client, scaled to the peak."""

from datetime import date

from memories.selectors import DailyWrites
from memories.views.usage_chart import COLOURS, HEIGHT, OTHER_COLOUR, WIDTH, writes_chart

TODAY = date(2025, 6, 30)


def test_bars_stack_per_day_and_the_busiest_day_fills_the_height():
    rows = [
        DailyWrites(day=date(2025, 6, 29), written_by="cursor", count=1),
        DailyWrites(day=TODAY, written_by="claude-code", count=1),
        DailyWrites(day=TODAY, written_by="cursor", count=3),
    ]
    chart = writes_chart(rows, days=30, today=TODAY)
    assert chart.peak == 4 and chart.total == 5 and chart.first_day == date(2025, 6, 1)
    yesterday, today_code, today_cursor = chart.bars
    assert today_code.x == today_cursor.x == round(29 * WIDTH / 30 + 1, 2)
    assert today_code.height + today_cursor.height == HEIGHT and today_cursor.y == 0
    assert yesterday.height == HEIGHT / 4 and yesterday.x < today_code.x
    assert [(e.client, e.writes) for e in chart.legend] == [("cursor", 4), ("claude-code", 1)]
    assert today_cursor.colour == COLOURS[0] and today_code.colour == COLOURS[1]


def test_clients_beyond_the_palette_share_the_other_colour_and_unnamed_ones_get_a_label():
    rows = [DailyWrites(day=TODAY, written_by=f"client-{i}", count=10 - i) for i in range(len(COLOURS))]
    rows.append(DailyWrites(day=TODAY, written_by="", count=1))
    chart = writes_chart(rows, days=7, today=TODAY)
    assert chart.legend[-1].client == "(unnamed)" and chart.legend[-1].colour == OTHER_COLOUR


def test_no_writes_draw_no_bars():
    chart = writes_chart([], days=30, today=TODAY)
    assert chart.bars == [] and chart.peak == 0 and chart.legend == []
