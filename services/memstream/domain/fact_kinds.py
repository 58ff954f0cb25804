"""What kind of thing a named thing is, and so which slot it fills: "a Pixel 8" is a phone.

People rarely say "my phone is a Pixel"; they say "I bought the Pixel", "my Tecno keeps
freezing", "my cousin sent me his old iPhone". Read as `owns`, every such thing piles up
beside the last (owning is many-valued), and a new phone never replaces the old one. A
make's name says the kind: a phone maker's name is a phone, a car maker's a car. A thing
of a known kind goes to that kind's slot, which holds one value at a time, so the new
phone closes the old. Makes are general knowledge, kept short; a make that builds two
kinds (Honda: cars and motorbikes) names the one it is best known for, and one too mixed
to say ("Samsung" laptops are rare, its phones are not) is left to its commonest kind.
"""

from __future__ import annotations

PHONE_MAKES = frozenset({
    "iphone", "pixel", "samsung", "galaxy", "tecno", "xiaomi", "redmi", "huawei", "nokia",
    "motorola", "oneplus", "oppo", "vivo", "infinix", "realme", "blackberry", "xperia",
    "fairphone",
})  # fmt: skip

CAR_MAKES = frozenset({
    "toyota", "honda", "ford", "fiat", "volkswagen", "vw", "bmw", "audi", "mercedes",
    "kia", "hyundai", "nissan", "mazda", "subaru", "tesla", "volvo", "renault", "peugeot",
    "citroen", "citroën", "skoda", "škoda", "opel", "vauxhall", "chevrolet", "chevy",
    "jeep", "dodge", "lexus", "suzuki", "mitsubishi", "dacia", "porsche", "jaguar",
    "polestar", "byd", "cupra", "lancia", "saab", "prius", "corolla", "yaris", "punto",
    "clio", "corsa", "fiesta",
})  # fmt: skip

MOTORBIKE_MAKES = frozenset({
    "kawasaki", "ducati", "harley", "harley-davidson", "ktm", "triumph", "yamaha", "vespa",
    "aprilia",
})  # fmt: skip

LAPTOP_MAKES = frozenset({
    "macbook", "thinkpad", "chromebook", "xps", "lenovo", "asus", "acer", "alienware",
})  # fmt: skip

# Slots whose values are things one has, and may be of a known kind.
THING_SLOTS = frozenset({"owns", "uses", "car"})

_KINDS = (
    ("phone", PHONE_MAKES),
    ("car", CAR_MAKES),
    ("motorbike", MOTORBIKE_MAKES),
    ("laptop", LAPTOP_MAKES),
)
KNOWN_MAKES = PHONE_MAKES | CAR_MAKES | MOTORBIKE_MAKES | LAPTOP_MAKES


def kind_of(value: str) -> str | None:
    """The slot a named thing fills, from its first word ("Pixel 8": phone), if known.

    Only a capitalised make counts ("Jeep", not "a jeep tour"); "iPhone" is capitalised past
    its first letter. Model names that are common words (Golf, Focus, Panda) are left out:
    said alone they name a game, a habit, an animal.
    """
    words = value.split()
    # A generation or a year before the make names no kind: "M2 MacBook Air", "2015 Honda".
    while len(words) > 1 and any(ch.isdigit() for ch in words[0]):
        words = words[1:]
    if not words or not any(ch.isupper() for ch in words[0]):
        return None
    first = words[0].lower()
    for attribute, makes in _KINDS:
        if first in makes:
            return attribute
    return None


def slot_of_thing(attribute: str, value: str) -> str:
    """The slot a fact about a thing belongs in: its kind's, when the thing is of a known
    kind and the fact is about having or using it; else the attribute as read."""
    if attribute not in THING_SLOTS:
        return attribute
    return kind_of(value) or attribute


# An organisation whose name ends in one of these words is a place of study: "Perimeter
# College", "Mesa Elementary", "Georgia Tech", "the Goethe Institute". The name's head says
# the kind as a make says a phone's, in any English-speaking country's naming of schools.
SCHOOL_HEADS = frozenset({
    "college", "university", "uni", "school", "academy", "institute", "polytechnic",
    "elementary", "preschool", "kindergarten", "tech", "conservatory", "conservatoire",
    "gymnasium", "lycee", "lycée", "seminary",
})  # fmt: skip


def is_school(value: str) -> bool:
    """Whether a named organisation is a school by its name's head ("Perimeter College"):
    every word past an article capitalised (or a connector: "University of Leeds")."""
    words = value.split()
    if words and words[0].lower() in {"the", "a", "an"}:
        words = words[1:]
    if not words or not words[0][:1].isupper():
        return False
    return any(w.lower() in SCHOOL_HEADS and w[:1].isupper() for w in words)
