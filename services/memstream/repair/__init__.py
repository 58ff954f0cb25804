"""Noticing a lost store and writing it again from the other (issue #36).

`divergence` compares the tree with the index, cheaply, for readiness and a metric;
`restore` writes the index again from the tree, and the tree from the index, without
deriving anything again.
"""
