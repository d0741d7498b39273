"""The injection rules by family, each module adding its rules to the table in `rules._rules`
(in this order: a rule's index in the table is its place in the one pass)."""
