"""Spec 17 K3 (selector value classes of ``ovstage.population``, 14.1.2):
immutable, validated at construction, readable reprs, value equality."""

import pytest

from ovstage import PopulationDomain, population as P


def test_prim_predicates_build_and_print():
    p = P.PrimPredicate.and_(P.PrimPredicate.all(), P.PrimPredicate.has_type("Mesh"))
    assert repr(p) == "PrimPredicate.AND(PrimPredicate.ALL(), PrimPredicate.HAS_TYPE('Mesh'))"
    assert repr(P.PrimPredicate.has_type("Mesh", "Cube")) == "PrimPredicate.HAS_TYPE('Mesh', 'Cube')"
    assert p.kind is P.PrimPredicateKind.AND and p.strings == () and len(p.subpredicates) == 2 and p.nested is None
    nested = P.PrimPredicate.has_property(P.PropertyPredicate.is_custom())
    assert nested.nested == P.PropertyPredicate.is_custom()
    assert P.PrimPredicate.has_type("A") == P.PrimPredicate(P.PrimPredicateKind.HAS_TYPE, strings=("A",))
    assert P.PrimPredicate.not_(P.PrimPredicate.none()).subpredicates == (P.PrimPredicate.none(),)
    for kind_ctor in ("has_type", "is_a_type", "has_schema", "has_applied_schema", "has_applied_schema_in_namespace",
                      "has_path", "is_under_path", "has_kind", "has_metadata", "has_purpose"):
        assert getattr(P.PrimPredicate, kind_ctor)("x").strings == ("x",)
    for ctor in ("is_attribute", "is_relationship", "is_custom", "is_authored"):
        assert getattr(P.PropertyPredicate, ctor)().strings == ()


@pytest.mark.parametrize("make, error", [
    (lambda: P.PrimPredicate.has_type(), ValueError),
    (lambda: P.PrimPredicate.has_type(""), ValueError),
    (lambda: P.PrimPredicate.has_type(3), TypeError),
    (lambda: P.PrimPredicate.and_(), ValueError),
    (lambda: P.PrimPredicate.or_(P.PropertyPredicate.all()), TypeError),
    (lambda: P.PrimPredicate.has_property(P.PrimPredicate.all()), TypeError),
    (lambda: P.PrimPredicate(P.PrimPredicateKind.ALL, strings=("x",)), TypeError),
    (lambda: P.PrimPredicate(P.PrimPredicateKind.HAS_TYPE, strings=("x",), subpredicates=(P.PrimPredicate.all(),)),
     TypeError),
    (lambda: P.PrimPredicate(99), ValueError),
    (lambda: P.PropertyPredicate.has_name(), ValueError),
    (lambda: P.PropertyPredicate.not_(P.PrimPredicate.all()), TypeError),
    (lambda: P.Selector(prim_predicate=P.PropertyPredicate.all()), TypeError),
    (lambda: P.Selector(prim_metadata_paths="doc"), TypeError),
    (lambda: P.Selector(property_metadata_paths=[""]), ValueError),
    (lambda: P.Desc(selectors=[1]), TypeError),
    (lambda: P.Desc(domains=-1), ValueError),
    (lambda: P.Desc(domains=1.0), TypeError),
])
def test_invalid_values_are_refused_at_construction(make, error):
    with pytest.raises(error):
        make()


def test_values_are_immutable():
    p = P.PrimPredicate.all()
    s = P.Selector()
    d = P.Desc()
    for obj, name in ((p, "kind"), (s, "prim_predicate"), (d, "domains")):
        with pytest.raises(AttributeError):
            setattr(obj, name, None)
        with pytest.raises(AttributeError):
            delattr(obj, name)


def test_selector_and_desc_defaults():
    s = P.Selector()
    assert s.prim_predicate == P.PrimPredicate.none() and s.property_predicate == P.PropertyPredicate.none()
    assert (s.prim_metadata_paths, s.property_metadata_paths) == ((), ())
    d = P.Desc(domains=PopulationDomain.RENDERING, selectors=[s], stage_metadata_paths=["doc"])
    assert (d.domains, d.selectors, d.stage_metadata_paths) == (int(PopulationDomain.RENDERING), (s,), ("doc",))
    assert P.Desc().domains == int(PopulationDomain.NONE)
    assert d == P.Desc(domains=PopulationDomain.RENDERING, selectors=(s,), stage_metadata_paths=("doc",))
