"""The drawing of an entity's neighbourhood on its dashboard page: positions for an SVG the
template writes (no JavaScript, nothing from elsewhere). The entity sits in the middle, its
neighbours on a circle around it, strongest link first from the top, clockwise."""

import math
from dataclasses import dataclass

from memories.graph.explore import GraphView
from memories.models import Entity

WIDTH = 720
HEIGHT = 480
RING_RADIUS = 180
# Node radii: from the smallest entity to the most mentioned one.
MIN_NODE_RADIUS = 6
MAX_NODE_RADIUS = 18
# Edge widths, from the weakest edge to the strongest.
MIN_EDGE_WIDTH = 1.0
MAX_EDGE_WIDTH = 6.0
# Labels are cut to this many characters (the full name is in the node's title).
LABEL_CHARS = 24


@dataclass(frozen=True)
class DrawnNode:
    entity: Entity
    x: float
    y: float
    radius: float
    label: str
    memories: int
    centre: bool
    # Where the label goes: beside the node, away from the middle.
    label_x: float
    label_y: float
    anchor: str


@dataclass(frozen=True)
class DrawnEdge:
    x1: float
    y1: float
    x2: float
    y2: float
    width: float
    title: str


@dataclass(frozen=True)
class Drawing:
    width: int
    height: int
    nodes: list[DrawnNode]
    edges: list[DrawnEdge]


def neighbourhood_drawing(view: GraphView, centre: Entity) -> Drawing:
    """Positions of `view`'s entities around `centre` and of the edges between them."""
    to_centre = {
        (edge.target if edge.source.pk == centre.pk else edge.source).pk: edge.weight
        for edge in view.edges
        if centre.pk in (edge.source.pk, edge.target.pk)
    }
    others = sorted(
        (node for node in view.nodes if node.entity.pk != centre.pk),
        key=lambda node: (-to_centre.get(node.entity.pk, 0.0), node.entity.key),
    )
    most = max((node.memories for node in view.nodes), default=1) or 1
    positions: dict[int, tuple[float, float]] = {centre.pk: (WIDTH / 2, HEIGHT / 2)}
    for index, node in enumerate(others):
        angle = -math.pi / 2 + 2 * math.pi * index / len(others)
        positions[node.entity.pk] = (
            WIDTH / 2 + RING_RADIUS * math.cos(angle),
            HEIGHT / 2 + RING_RADIUS * math.sin(angle),
        )
    nodes = []
    for node in view.nodes:
        if node.entity.pk not in positions:
            continue
        x, y = positions[node.entity.pk]
        radius = MIN_NODE_RADIUS + (MAX_NODE_RADIUS - MIN_NODE_RADIUS) * math.sqrt(node.memories / most)
        is_centre = node.entity.pk == centre.pk
        left = x < WIDTH / 2 - 1
        nodes.append(
            DrawnNode(
                entity=node.entity,
                x=round(x, 1),
                y=round(y, 1),
                radius=round(radius, 1),
                label=_label(node.entity.name),
                memories=node.memories,
                centre=is_centre,
                label_x=round(x if is_centre else x + (-1 if left else 1) * (radius + 4), 1),
                label_y=round(y + radius + 14 if is_centre else y + 4, 1),
                anchor="middle" if is_centre else ("end" if left else "start"),
            )
        )
    strongest = max((edge.weight for edge in view.edges), default=1.0) or 1.0
    edges = [
        DrawnEdge(
            *_line(positions[edge.source.pk], positions[edge.target.pk]),
            width=round(MIN_EDGE_WIDTH + (MAX_EDGE_WIDTH - MIN_EDGE_WIDTH) * edge.weight / strongest, 2),
            title=f"{edge.source.name} and {edge.target.name}: {edge.memories} memories",
        )
        for edge in view.edges
        if edge.source.pk in positions and edge.target.pk in positions
    ]
    return Drawing(WIDTH, HEIGHT, nodes, edges)


def _line(start: tuple[float, float], end: tuple[float, float]) -> tuple[float, float, float, float]:
    """x1, y1, x2, y2, to a tenth of a pixel."""
    return round(start[0], 1), round(start[1], 1), round(end[0], 1), round(end[1], 1)


def _label(name: str) -> str:
    return name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"
