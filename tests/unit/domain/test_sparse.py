from memstream.domain.lexical import stem, term_id
from memstream.domain.query import parse_query
from memstream.domain.sparse import document_vector, query_vector


def test_document_vector_is_sorted_and_positive() -> None:
    vector = document_vector("Caroline went to the pottery class; pottery calms her.")
    assert list(vector.indices) == sorted(vector.indices)
    assert len(vector.indices) == len(vector.values) == len(set(vector.indices))
    assert all(v > 0 for v in vector.values)
    weights = dict(zip(vector.indices, vector.values, strict=True))
    # A repeated term weighs more than a single one (BM25 term frequency).
    assert weights[term_id(stem("pottery"))] > weights[term_id(stem("class"))]


def test_query_vector_has_unit_weight_per_distinct_term() -> None:
    vector = query_vector(parse_query("pottery pottery class"))
    assert set(vector.indices) == {term_id(stem("pottery")), term_id(stem("class"))}
    assert vector.values == (1.0, 1.0)


def test_stopword_only_text_gives_an_empty_vector() -> None:
    assert document_vector("and the of").indices == ()
    assert query_vector(parse_query("")).values == ()
