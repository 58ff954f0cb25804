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

# Makers known for cameras ("shooting with the Canon 6D"); Sony is left out, as its name
# alone says a phone or a television as often.
CAMERA_MAKES = frozenset({
    "canon", "nikon", "fujifilm", "fuji", "leica", "olympus", "pentax", "lumix", "gopro",
    "hasselblad", "ricoh",
})  # fmt: skip

# Slots whose values are things one has, and may be of a known kind.
THING_SLOTS = frozenset({"owns", "uses", "car"})

_KINDS = (
    ("phone", PHONE_MAKES),
    ("car", CAR_MAKES),
    ("motorbike", MOTORBIKE_MAKES),
    ("laptop", LAPTOP_MAKES),
    ("camera", CAMERA_MAKES),
)
KNOWN_MAKES = PHONE_MAKES | CAR_MAKES | MOTORBIKE_MAKES | LAPTOP_MAKES | CAMERA_MAKES


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
    if attribute == "member_of":  # "joined EQ Bank": a bank, one at a time
        return place_kind(value) or attribute
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


# Kinds of place one is a regular, a customer or a member of, one at a time: a name whose
# head is one of these says its slot ("EQ Bank" a bank, "St Mary's Church" a church, "Café
# Lumen" a cafe), as a make says a phone's. Synonyms fold into one slot, so a new cafe
# closes the old whichever word names it.
PLACE_KINDS = {
    "bank": "bank", "church": "church", "chapel": "church", "cathedral": "church",
    "parish": "church", "mosque": "mosque", "synagogue": "synagogue",
    "cafe": "cafe", "café": "cafe", "coffeehouse": "cafe", "gym": "gym", "clinic": "clinic",
    "surgery": "surgery", "pharmacy": "pharmacy", "chemist": "pharmacy", "library": "library",
    "pub": "pub", "bar": "bar", "restaurant": "restaurant", "bakery": "bakery",
    "salon": "salon", "barbers": "barber", "barbershop": "barber", "studio": "studio",
    "supermarket": "supermarket", "garage": "garage", "dentist": "dentist",
    "dentists": "dentist", "vets": "vet", "shelter": "shelter", "pool": "pool",
}  # fmt: skip
# A kind named before the rest of the name: "Café Lumen", "Bank of Ireland", "Church of
# the Redeemer".
_LEADING_KINDS = frozenset({"cafe", "café", "bank", "church", "chapel", "cathedral"})


def place_kind(value: str) -> str | None:
    """The slot a named place fills by its head word, if it names a kind ("EQ Bank": bank).

    The head is the name's last word, or its first when the kind opens it ("Café Lumen").
    A lowercase word before the head makes a compound kind of its own: "the Fremantle food
    bank" is a food bank, not a bank, and "the Swan Valley animal shelter" an animal
    shelter; so the kind is then both words. Something with no capitalised word names no
    place ("the bank" is any bank)."""
    words = value.split()
    if words and words[0].lower() in {"the", "a", "an"}:
        words = words[1:]
    if len(words) < 2 or not any(w[:1].isupper() for w in words):
        return None
    head = words[-1].lower()
    if head in PLACE_KINDS:
        before = words[-2]
        if before.isalpha() and before.islower():
            return f"{before}_{PLACE_KINDS[head]}"
        return PLACE_KINDS[head]
    first = words[0].lower()
    if first in _LEADING_KINDS and (words[1][:1].isupper() or words[1] == "of"):
        return PLACE_KINDS.get(first)
    return None


_CONNECTORS = frozenset({"of", "de", "the", "and", "&", "on", "du", "la"})


def named_place(raw: str) -> str | None:
    """The longest opening of `raw` that names a place of a known kind ("EQ Bank now":
    EQ Bank; "the Fremantle food bank on Saturdays": Fremantle food bank), without its
    article; None when none does. Past the article the name's words are capitalised (or
    connectors: "Bank of Ireland"), but for a lowercase compound kind ending it."""
    words = raw.split()[:8]
    if words and words[0].lower() in {"the", "a", "an", "our", "my"}:
        words = words[1:]
    for size in range(min(len(words), 6), 1, -1):
        said = [w.rstrip(".,;:!?") for w in words[:size]]
        if not all(said) or not said[0][:1].isupper():
            continue
        kind = place_kind(" ".join(said))
        if kind is None:
            continue
        named = said[:-2] if "_" in kind else said[:-1] if said[-1][:1].isupper() else said
        if all(w[:1].isupper() or w.lower() in _CONNECTORS for w in named):
            return " ".join(said)
    return None
