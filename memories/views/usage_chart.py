"""The dashboard's "writes per client" chart: daily stacked bars, laid out here and drawn as
inline SVG by the template (no JavaScript, nothing fetched)."""

from collections import defaultdict
from dataclasses import dataclass
from datetime import date, timedelta

from memories.selectors import DailyWrites

WIDTH = 600
HEIGHT = 140
# Clients beyond the busiest few share one grey "other" colour.
COLOURS = ("#3b6fd8", "#e0833a", "#3aa47a", "#b04fb8", "#c9a227")
OTHER_COLOUR = "#9aa3b5"
UNNAMED_CLIENT = "(unnamed)"


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    colour: str
    title: str


@dataclass(frozen=True)
class LegendEntry:
    client: str
    colour: str
    writes: int


@dataclass(frozen=True)
class WritesChart:
    width: int
    height: int
    bars: list[Bar]
    legend: list[LegendEntry]
    peak: int
    first_day: date
    last_day: date
    total: int


def writes_chart(rows: list[DailyWrites], *, days: int, today: date) -> WritesChart:
    """One column per day (oldest left), one stacked segment per client, scaled to the busiest day."""
    first_day = today - timedelta(days=days - 1)
    totals: dict[str, int] = defaultdict(int)
    for row in rows:
        totals[row.written_by or UNNAMED_CLIENT] += row.count
    ranked = sorted(totals, key=lambda client: (-totals[client], client))
    colour_of = {client: COLOURS[i] if i < len(COLOURS) else OTHER_COLOUR for i, client in enumerate(ranked)}
    per_day: dict[date, int] = defaultdict(int)
    for row in rows:
        per_day[row.day] += row.count
    peak = max(per_day.values(), default=0)
    slot = WIDTH / days
    stacked: dict[date, float] = defaultdict(float)
    bars = []
    for row in rows:
        client = row.written_by or UNNAMED_CLIENT
        height = HEIGHT * row.count / peak
        stacked[row.day] += height
        bars.append(
            Bar(
                x=round((row.day - first_day).days * slot + 1, 2),
                y=round(HEIGHT - stacked[row.day], 2),
                width=round(slot - 2, 2),
                height=round(height, 2),
                colour=colour_of[client],
                title=f"{row.day.isoformat()}: {row.count} by {client}",
            )
        )
    legend = [LegendEntry(client=client, colour=colour_of[client], writes=totals[client]) for client in ranked]
    return WritesChart(
        width=WIDTH,
        height=HEIGHT,
        bars=bars,
        legend=legend,
        peak=peak,
        first_day=first_day,
        last_day=today,
        total=sum(totals.values()),
    )
