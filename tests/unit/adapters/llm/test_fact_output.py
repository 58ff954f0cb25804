"""An LLM's facts about an L1, keyed and checked as the rules' are: plain values in and out."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from memstream.adapters.llm.fact_output import facts_of, read_attribute
from memstream.domain.fact_extraction import extract_facts
from memstream.domain.facts import ENDED, Certainty
from memstream.domain.knowledge import fact_versions
from memstream.domain.models import Level, MemoryNode, SourceMessage

APR = datetime(2024, 4, 12, 20, 0, tzinfo=UTC)
SAID = (
    SourceMessage("m1", "Maya", "user", "Big news: we moved to Berlin last month!", APR),
    SourceMessage("m2", "Maya", "user", "My brother moved to Madrid too.", APR),
    SourceMessage("m3", "Bot", "assistant", "Tell me more about that.", APR),
)
LEAF = MemoryNode(
    id="l1",
    user_id="maya",
    level=Level.SEGMENT,
    t_start=APR,
    t_end=APR,
    text="...",
    source_ids=("m1", "m2", "m3"),
    messages=SAID,
)


@dataclass
class Read:
    subject: str
    attribute: str
    value: str
    source_ids: list[str] = field(default_factory=lambda: ["m1"])
    relation_of: str | None = None
    negated: bool = False
    since: str | None = None
    certainty: Certainty = "stated"


def test_the_speaker_and_someone_named_by_relation_get_the_rules_keys() -> None:
    berlin, madrid = facts_of(
        [
            Read("Maya", "lives_in", "Berlin", since="2024-03-01"),
            Read("brother", "lives_in", "Madrid", ["m2"], relation_of="Maya"),
        ],
        LEAF,
    )
    assert (berlin.subject, berlin.text, berlin.source_ids) == (
        "speaker:maya",
        "Maya lives in Berlin",
        ("m1",),
    )
    assert berlin.valid_from == datetime(2024, 3, 1, tzinfo=UTC) and berlin.recorded_at == APR
    assert (madrid.subject, madrid.subject_name) == ("kin:maya:brother", "Maya's brother")
    # The same claim as the rules read it has the same slot: one supersedes the other.
    rules = {f.slot for f in extract_facts(SAID, user_id="maya")}
    assert {berlin.slot, madrid.slot} == rules


def test_citations_must_name_the_leafs_messages_and_dates_must_be_real() -> None:
    [fact] = facts_of(
        [
            Read("Maya", "likes", "jazz", ["m404"]),  # cites nothing it was shown: dropped
            Read("Maya", "likes", "techno", ["m404", "m1"], since="last spring"),
        ],
        LEAF,
    )
    assert (fact.value, fact.source_ids, fact.valid_from) == ("techno", ("m1",), APR)
    [sailing] = facts_of([Read("Maya", "hobby", "sailing", since="2031-01-01")], LEAF)
    assert sailing.valid_from == APR  # years after the message: a misreading
    [soon] = facts_of([Read("Maya", "hobby", "sailing", since="2024-05-01")], LEAF)
    assert soon.valid_from == datetime(2024, 5, 1, tzinfo=UTC)  # a plan, weeks ahead
    assert facts_of([Read("Maya", "likes", "jazz", ["m404"])], LEAF) == ()
    assert facts_of([Read("Maya", "my point", "happy")], LEAF) == ()  # no lasting attribute


def test_two_values_of_one_slot_from_one_message_yield_neither() -> None:
    read = [
        Read("Maya", "lives_in", "Berlin"),
        Read("Maya", "lives_in", "Rome"),
        Read("Maya", "likes", "jazz"),
        Read("Maya", "likes", "jazz"),
    ]
    assert [f.value for f in facts_of(read, LEAF)] == ["jazz"]


def test_hostile_names_and_values_are_cleaned_and_never_take_a_speakers_slot() -> None:
    read = [
        Read("speaker:maya", "lives_in", "Oslo"),
        Read("<b>Max</b>\x00" + "x" * 10_000, "pet", "<script>cat</script>"),
    ]
    oslo, pet = facts_of(read, LEAF)
    assert oslo.subject == "speaker maya" != "speaker:maya"
    assert "<" not in pet.subject_name and "\x00" not in pet.subject_name
    assert len(pet.subject_name) <= 200 and "<" not in pet.value
    assert facts_of([Read("Max", "pet", " " * 3)], LEAF) == ()


def test_a_thing_of_a_known_make_takes_its_kinds_slot_as_the_rules_give_it() -> None:
    said = (SourceMessage("m1", "Maya", "user", "I finally bought a Pixel.", APR),)
    (pixel,) = facts_of([Read("Maya", "owns", "Pixel")], LEAF)
    (rules,) = extract_facts(said, user_id="maya")
    assert (pixel.attribute, pixel.text) == ("phone", "Maya uses a Pixel")
    assert pixel.slot == rules.slot  # a later phone from either backend closes this one
    (sofa,) = facts_of([Read("Maya", "owns", "sofa")], LEAF)
    assert sofa.attribute == "owns"  # a thing of no known make stays where the model put it


def test_an_ending_without_its_attribute_closes_what_the_rules_ending_closes() -> None:
    before = SourceMessage("m0", "Maya", "user", "I play for the Magpies now.", APR)
    said = SourceMessage("m1", "Maya", "user", "I've left the Magpies.", APR + timedelta(days=9))
    leaf = replace(LEAF, source_ids=("m1",), messages=(said,))
    # The model need not say it is negated: an ending is one.
    [ending] = facts_of([Read("Maya", "ended", "the Magpies")], leaf)
    [rules] = extract_facts((said,), user_id="maya")
    assert (ending.subject, ending.attribute, ending.negated) == ("speaker:maya", ENDED, True)
    assert ending.slot == rules.slot
    # Resolved where facts are read, as the rules' ending is: the team version is closed.
    team = extract_facts((before,), user_id="maya")
    for read in (ending, rules):
        [magpies, left] = fact_versions([*team, read])
        assert (magpies.attribute, magpies.value) == ("team", "the Magpies")
        assert magpies.valid_to == said.ts and magpies.superseded_by == left.fact_id
        assert left.negated and left.attribute == "team"


def test_an_ending_the_same_lines_give_an_attribute_is_not_kept_twice() -> None:
    read = [Read("Maya", "ended", "car"), Read("Maya", "car", "Golf", negated=True)]
    [car] = facts_of(read, LEAF)
    assert (car.attribute, car.negated) == ("car", True)
    # From other lines, both are kept: each ends what it names.
    apart = [Read("Maya", "ended", "keto", ["m2"]), Read("Maya", "car", "Golf", negated=True)]
    assert {f.attribute for f in facts_of(apart, LEAF)} == {ENDED, "car"}


def test_an_attribute_past_the_offered_list_is_read_as_the_rules_read_my_noun() -> None:
    # Spelled as a model may spell it; synonyms land on the fixed list; no lasting
    # attribute, or none that can be a slug, names nothing.
    assert read_attribute("Lives In") == "lives_in"
    assert read_attribute("Favourite Café") == "favourite_cafe"
    assert read_attribute("my employer") == "works_at"
    assert read_attribute("blood-pressure medication") == "blood_pressure_medication"
    for nothing in ("point", "my guess", "", "   ", "GP!", "a" * 41):
        assert read_attribute(nothing) is None, nothing
    # An unreadable attribute drops its fact alone.
    read = [Read("Maya", "point", "Berlin"), Read("Maya", "lives_in", "Berlin")]
    assert [f.attribute for f in facts_of(read, LEAF)] == ["lives_in"]


def test_a_new_value_of_a_singular_noun_closes_the_old_one_a_plural_keeps_both() -> None:
    jan = SourceMessage("m1", "Bashir", "user", "Started on amlodipine.", APR)
    apr = SourceMessage("m2", "Bashir", "user", "Switched to losartan.", APR + timedelta(days=80))
    leaf = replace(LEAF, user_id="bashir", source_ids=("m1", "m2"), messages=(jan, apr))
    read = [Read("Bashir", "medication", "amlodipine"), Read("Bashir", "medication", "losartan")]
    old, new = fact_versions(
        facts_of([read[0]], leaf) + facts_of([replace(read[1], source_ids=["m2"])], leaf)
    )
    assert (old.value, old.valid_to, old.superseded_by) == ("amlodipine", apr.ts, new.fact_id)
    assert new.valid_to is None
    many = [
        Read("Bashir", "medications", "amlodipine"),
        Read("Bashir", "medications", "losartan", ["m2"]),
    ]
    assert all(v.valid_to is None for v in fact_versions(facts_of(many, leaf)))
