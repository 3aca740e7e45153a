"""The one-line reason every layer stores for a failure."""

from ncdynamics._reasons import one_line_reason


def test_type_and_first_line_of_the_message():
    assert one_line_reason(ValueError("bad x\nmore detail")) == "ValueError: bad x"
    assert one_line_reason(KeyError()) == "KeyError"
    assert one_line_reason("  first\nsecond") == "first"
    assert one_line_reason("") == ""
