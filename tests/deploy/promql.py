"""Just enough of a PromQL reader to list what an expression names: each metric selector (family
and label matchers) and each label named by a grouping clause (by, without, on, ignoring,
group_left, group_right). The checks of tests/deploy/ compare these with the live exposition of
a running server. An expression that uses a construct this reader does not know (label_replace,
label_join: they name labels in strings) is refused rather than half-read; promtool parses every
expression as well, so what is read here has already parsed."""
import re

TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?:ms|s|m|h|d|w|y)?(?:\d+(?:ms|s|m|h|d|w|y))*)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<op>=~|!~|!=|==|<=|>=|[-+*/%^<>=(){}\[\],:@])
""", re.VERBOSE)

GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
KEYWORDS = GROUPING | {"and", "or", "unless", "bool", "offset", "inf", "nan", "atan2"}
REFUSED = {"label_replace", "label_join"}


class Selector:
    def __init__(self, family):
        self.family = family
        self.matchers = []  # (label, op, value)

    def __repr__(self):
        return "%s%r" % (self.family, self.matchers)


def tokens(expr):
    out = []
    pos = 0
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if m is None:
            raise ValueError("cannot read %r at %d" % (expr[pos:pos + 20], pos))
        pos = m.end()
        if m.lastgroup != "space":
            out.append((m.lastgroup, m.group()))
    return out


def unquote(text):
    if text[0] == "`":
        return text[1:-1]
    return re.sub(r"\\(.)", r"\1", text[1:-1])


def _matchers(toks, i, selector):
    """Reads `{label op "value", ...}` from toks[i] == '{'; returns the index after '}'."""
    i += 1
    while toks[i][1] != "}":
        if toks[i][1] == ",":
            i += 1
            continue
        label, op, value = toks[i][1], toks[i + 1][1], unquote(toks[i + 2][1])
        if label == "__name__" and op == "=":
            selector.family = value
        else:
            selector.matchers.append((label, op, value))
        i += 3
    return i + 1


def label_block(text):
    """[(label, op, value)] of a label block `{a="x",b=~"y"}` (a selector's or an exposition
    sample's)."""
    selector = Selector(None)
    _matchers(tokens(text), 0, selector)
    return selector.matchers


def read(expr):
    """Returns (selectors, grouping_labels) of a PromQL expression."""
    toks = tokens(expr)
    selectors, grouping = [], set()
    i = 0
    while i < len(toks):
        kind, text = toks[i]
        following = toks[i + 1][1] if i + 1 < len(toks) else None
        if text == "[":  # a range or subquery: durations only
            while toks[i][1] != "]":
                i += 1
            i += 1
        elif kind == "ident" and text in REFUSED:
            raise ValueError("%s names labels in strings; extend tests/deploy/promql.py" % text)
        elif kind == "ident" and text in GROUPING and following == "(":
            i += 2
            while toks[i][1] != ")":
                if toks[i][0] == "ident":
                    grouping.add(toks[i][1])
                i += 1
            i += 1
        elif kind == "ident" and (text in KEYWORDS or following in ("(", "by", "without")):
            i += 1  # a keyword, a function or an aggregation (`sum by (...) (...)`)
        elif kind == "ident":
            selector = Selector(text)
            selectors.append(selector)
            i = _matchers(toks, i + 1, selector) if following == "{" else i + 1
        elif text == "{":  # a selector without a name: {__name__="..."}
            selector = Selector(None)
            selectors.append(selector)
            i = _matchers(toks, i, selector)
        else:
            i += 1
    return selectors, grouping


def literal_values(op, value):
    """The label values a matcher names literally: its value for = and !=, the alternatives of a
    regex made only of words and '|' for =~ and !~; None for any other regex."""
    if op in ("=", "!="):
        return [value]
    if re.fullmatch(r"[A-Za-z0-9_.:+\-]+(\|[A-Za-z0-9_.:+\-]+)*", value):
        return value.split("|")
    return None
