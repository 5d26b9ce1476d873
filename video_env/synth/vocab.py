"""Vocabulary of the synthetic world: scene styles, needle carriers and their facts.

Every needle is carried by an object ("the street sign", "the wall clock") that appears
once per video, so the question built from the carrier has exactly one answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Category = Literal["text", "visual", "time", "object"]

#: The four FALCON-Bench question categories.
CATEGORIES: tuple[Category, ...] = ("text", "visual", "time", "object")


@dataclass(frozen=True)
class SceneStyle:
    """A kind of scene: how it looks and how a captioner would describe it."""

    name: str
    description: str
    top: tuple[int, int, int]
    bottom: tuple[int, int, int]


SCENE_STYLES: tuple[SceneStyle, ...] = (
    SceneStyle(
        "kitchen", "a kitchen with white cabinets and a window", (220, 215, 200), (150, 120, 90)
    ),
    SceneStyle("street", "a busy city street with parked cars", (150, 180, 215), (90, 90, 95)),
    SceneStyle(
        "office", "an open-plan office with desks and monitors", (200, 205, 210), (110, 110, 130)
    ),
    SceneStyle("park", "a green park with trees and a footpath", (140, 190, 235), (70, 140, 60)),
    SceneStyle(
        "beach", "a sandy beach by the sea on a sunny day", (120, 190, 240), (225, 205, 150)
    ),
    SceneStyle("forest", "a dense forest trail with tall pine trees", (90, 130, 100), (60, 80, 45)),
    SceneStyle("lab", "a laboratory with benches and glassware", (230, 235, 240), (160, 175, 190)),
    SceneStyle("warehouse", "a warehouse with shelves of boxes", (120, 115, 110), (80, 70, 60)),
    SceneStyle(
        "classroom",
        "a classroom with rows of desks and a blackboard",
        (210, 200, 170),
        (120, 90, 60),
    ),
    SceneStyle(
        "station", "a train station platform with a waiting crowd", (170, 170, 180), (100, 95, 90)
    ),
    SceneStyle(
        "living-room", "a living room with a sofa and a rug", (225, 200, 180), (140, 100, 80)
    ),
    SceneStyle("market", "an outdoor market with fruit stalls", (200, 190, 150), (150, 110, 70)),
)


@dataclass(frozen=True)
class Carrier:
    """An object that carries a needle's fact, and the question it answers.

    Attributes:
        name: Noun phrase with article, e.g. ``"the street sign"``.
        category: Question category.
        question: Question template with ``{carrier}``.
        facts: Name of the fact pool in :data:`FACT_POOLS`.
        presence: What a captioner says when it sees the carrier but not the fact.
        template: How a caption states the fact, with ``{fact}``.
    """

    name: str
    category: Category
    question: str
    facts: str
    presence: str
    template: str


def _carriers() -> tuple[Carrier, ...]:
    text_q = "What is written on {carrier}?"
    number_q = "What number is shown on {carrier}?"
    colour_q = "What colour is {carrier}?"
    material_q = "What material is {carrier} made of?"
    time_q = "What time does {carrier} show?"
    object_q = "Which object is placed on {carrier}?"
    rows = [
        (
            "the street sign",
            "text",
            text_q,
            "words",
            "a street sign",
            "a street sign reading {fact}",
        ),
        (
            "the shop banner",
            "text",
            text_q,
            "words",
            "a shop banner",
            "a shop banner saying {fact}",
        ),
        (
            "the whiteboard",
            "text",
            text_q,
            "words",
            "a whiteboard with writing",
            "a whiteboard reading {fact}",
        ),
        (
            "the laptop screen",
            "text",
            text_q,
            "words",
            "a laptop screen",
            "a laptop screen showing {fact}",
        ),
        (
            "the licence plate",
            "text",
            number_q,
            "numbers",
            "a car licence plate",
            "a licence plate {fact}",
        ),
        (
            "the scoreboard",
            "text",
            number_q,
            "numbers",
            "a scoreboard",
            "a scoreboard showing {fact}",
        ),
        (
            "the bus display",
            "text",
            number_q,
            "numbers",
            "a bus display",
            "a bus display showing {fact}",
        ),
        (
            "the umbrella",
            "visual",
            colour_q,
            "colours",
            "someone holding an umbrella",
            "a {fact} umbrella",
        ),
        ("the parked car", "visual", colour_q, "colours", "a parked car", "a {fact} parked car"),
        ("the balloon", "visual", colour_q, "colours", "a floating balloon", "a {fact} balloon"),
        (
            "the backpack",
            "visual",
            colour_q,
            "colours",
            "a person with a backpack",
            "a {fact} backpack",
        ),
        ("the front door", "visual", colour_q, "colours", "a front door", "a {fact} front door"),
        ("the kite", "visual", colour_q, "colours", "a kite in the air", "a {fact} kite"),
        ("the bench", "visual", material_q, "materials", "a bench", "a {fact} bench"),
        ("the statue", "visual", material_q, "materials", "a statue", "a {fact} statue"),
        ("the bowl", "visual", material_q, "materials", "a bowl", "a {fact} bowl"),
        (
            "the wall clock",
            "time",
            time_q,
            "times",
            "a clock on the wall",
            "a wall clock at {fact}",
        ),
        (
            "the station clock",
            "time",
            time_q,
            "times",
            "a large station clock",
            "a station clock at {fact}",
        ),
        (
            "the alarm clock",
            "time",
            time_q,
            "times",
            "an alarm clock",
            "an alarm clock showing {fact}",
        ),
        (
            "the oven clock",
            "time",
            time_q,
            "times",
            "an oven with a clock",
            "an oven clock showing {fact}",
        ),
        (
            "the kitchen table",
            "object",
            object_q,
            "objects",
            "something on a table",
            "a {fact} on a table",
        ),
        (
            "the bookshelf",
            "object",
            object_q,
            "objects",
            "something on a bookshelf",
            "a {fact} on a bookshelf",
        ),
        (
            "the windowsill",
            "object",
            object_q,
            "objects",
            "something on a windowsill",
            "a {fact} on a windowsill",
        ),
        (
            "the pedestal",
            "object",
            object_q,
            "objects",
            "something on a pedestal",
            "a {fact} on a pedestal",
        ),
        ("the desk", "object", object_q, "objects", "something on a desk", "a {fact} on a desk"),
    ]
    return tuple(Carrier(*row) for row in rows)  # type: ignore[arg-type]


CARRIERS: tuple[Carrier, ...] = _carriers()

FACT_POOLS: dict[str, tuple[str, ...]] = {
    "words": (
        "MAPLE",
        "HARBOR",
        "ZENITH",
        "COBALT",
        "FALCON",
        "ORCHID",
        "VELVET",
        "TUNDRA",
        "QUARTZ",
        "LAGOON",
        "EMBER",
        "PRISM",
        "SUMMIT",
        "CANYON",
        "MEADOW",
        "BEACON",
        "NEBULA",
        "SAFFRON",
        "GLACIER",
        "PEPPER",
        "RIVET",
        "MOSAIC",
        "CIRRUS",
        "OASIS",
    ),
    "numbers": tuple(
        str(n)
        for n in (
            1047,
            2381,
            3592,
            4126,
            5870,
            6213,
            7455,
            8039,
            9164,
            1502,
            2768,
            3314,
            4981,
            5627,
            6740,
            7093,
            8826,
            9350,
        )
    ),
    "colours": (
        "red",
        "blue",
        "green",
        "yellow",
        "orange",
        "purple",
        "pink",
        "white",
        "black",
        "brown",
    ),
    "materials": ("wood", "metal", "glass", "stone", "plastic"),
    "times": tuple(f"{h}:{m:02d}" for h in range(1, 13) for m in (0, 10, 15, 25, 30, 40, 45, 55)),
    "objects": (
        "teapot",
        "globe",
        "trophy",
        "guitar",
        "camera",
        "lantern",
        "vase",
        "typewriter",
        "telescope",
        "violin",
        "pineapple",
        "skateboard",
        "microscope",
        "hourglass",
    ),
}

#: RGB used to paint colour and material facts.
PAINT: dict[str, tuple[int, int, int]] = {
    "red": (210, 30, 30),
    "blue": (30, 70, 210),
    "green": (30, 160, 60),
    "yellow": (240, 210, 30),
    "orange": (245, 140, 20),
    "purple": (130, 50, 170),
    "pink": (245, 140, 190),
    "white": (245, 245, 245),
    "black": (15, 15, 15),
    "brown": (120, 70, 30),
    "wood": (150, 100, 55),
    "metal": (160, 165, 175),
    "glass": (170, 215, 230),
    "stone": (125, 120, 110),
    "plastic": (60, 200, 200),
}

#: Native pixel size range (at 720p) of the legible detail of each category's needles:
#: text glyph height, painted object height, clock diameter, object icon height.
PIXEL_SIZE_RANGE: dict[Category, tuple[float, float]] = {
    "text": (8.0, 40.0),
    "visual": (30.0, 160.0),
    "time": (28.0, 120.0),
    "object": (24.0, 120.0),
}
