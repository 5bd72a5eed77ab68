"""grading.similarity on a class of about 30 built here from the reference: complete
submissions written independently, partial ones, broken ones, hostile ones, copies with
renamed variables and reordered functions, a copy of a module that does not parse, and copies
of the reference. Nothing of it is run.

Independent work is written here as the reference with what tells learners apart: the
catalogue's Alternatives (correct code of another shape, each in one learner's work), a few
hand-written variants (`HAND`), and a learner's habits (`restyled`: for 60 % of the
statements of the learner's code, drawn per learner, one or two of its subexpressions held in
temporaries first, chosen among all of them, a comparison turned round, an augmented
assignment spelled out, a returned value checked). That leaves more in common than people
who never met would have (most of each module is still the reference's, and small
functions coincide), so the thresholds are tried with room to spare: independent pairs
share under half of their own code here, copies all of it.
"""

from __future__ import annotations

import ast
import json
import random
import re
import shutil
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from course.registry import EXERCISES_DIR, REFERENCE_DIR, SECTIONS
from course.signatures import Known
from grading import similarity
from grading.outputs import json_report, read_grades
from grading.scoring import TestResult as Record
from tools.class_example import catalogue_known, synthetic_result
from tools.exercises import find_blocks, generate
from tools.mistakes import Alternative, Mistake, apply_edits, load_catalogue

pytestmark = pytest.mark.slow  # make check replays it at unchanged inputs (replay.py)

MODULES = [s.file_name for s in SECTIONS]
HARM = "harm-was-done"
KEPT = 0.4  # the share of the learner's statements that a learner writes as the reference does

# Hand-written variants: {module: {function: its learner's code in another hand}}.
HAND = {
    "s1_setup.py": {"get_device": '''
def get_device() -> torch.device:
    wanted = os.environ.get(DEVICE_ENV_VAR) or None
    if wanted is not None:
        return torch.device(wanted)
    if torch.cuda.is_available():
        return torch.device("cuda")
    return torch.device("cpu")
'''},
    "s2_corpus.py": {"build_vocab": '''
def build_vocab(corpus):
    seen = set()
    for sentence in corpus_sentences(corpus):
        seen.update(tokenize(sentence))
    idx2word = {}
    for token in list(SPECIAL_TOKENS) + sorted(seen):
        idx2word[len(idx2word)] = token
    return {w: i for i, w in idx2word.items()}, idx2word
''', "pad_batch": '''
def pad_batch(sequences):
    check_sequences(sequences)
    longest = max(len(s) for s in sequences)
    columns = [list(s) + [PAD] * (longest - len(s)) for s in sequences]
    ids = torch.tensor(columns, dtype=torch.long).t().contiguous()
    return ids, torch.tensor([len(s) for s in sequences])
'''},
    "s6_context.py": {"cosine_sim": '''
def cosine_sim(a, b):
    check_vectors(a, b)
    x, y = a.double(), b.double()
    dot = (x * y).sum(-1)
    norms = x.norm(dim=-1) * y.norm(dim=-1)
    safe = torch.where(norms == 0, torch.ones_like(norms), norms)
    cos = torch.where(norms == 0, torch.zeros_like(dot), dot / safe)
    return torch.clamp(cos, min=-1.0, max=1.0).to(torch.float32)
'''},
}


# --- independent work: a learner's habits ----------------------------------------------------


_SCOPED = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.IfExp,
           ast.BoolOp)  # what a temporary taken out of it would change
_TURNED = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}


def _hoistable(stmt: ast.stmt) -> list[ast.expr]:
    """The calls, operations and subscripts of a statement's own expressions (not its body's)
    that a temporary could hold, outside comprehensions, lambdas and short circuits."""
    roots = {ast.Assign: ["value"], ast.AugAssign: ["value"], ast.AnnAssign: ["value"],
             ast.Return: ["value"], ast.Expr: ["value"], ast.If: ["test"], ast.For: ["iter"]}
    found = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, _SCOPED):
            return
        if isinstance(node, ast.Call | ast.BinOp | ast.Subscript) and isinstance(
                getattr(node, "ctx", ast.Load()), ast.Load):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    for field in roots.get(type(stmt), []):
        value = getattr(stmt, field)
        if value is not None:
            visit(value)
    return found


class _Swap(ast.NodeTransformer):
    def __init__(self, old: ast.AST, new: ast.AST) -> None:
        self.old, self.new = old, new

    def generic_visit(self, node):
        return self.new if node is self.old else super().generic_visit(node)


class _Habits(ast.NodeTransformer):
    """Rewrites the statements of the learner's lines (`lines`) in ways drawn from `rng`: one
    or two of a statement's subexpressions held in temporaries first (chosen among all of
    them), a comparison turned round, an augmented assignment spelled out, a returned value
    checked; each learner's code the same as another's only where both drew alike."""

    def __init__(self, lines: set[int], rng: random.Random) -> None:
        self.lines, self.rng, self.count = lines, rng, 0

    def generic_visit(self, node):
        node = super().generic_visit(node)
        for name in ("body", "orelse"):
            body = getattr(node, name, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                setattr(node, name, [new for stmt in body for new in self._restyle(stmt)])
        return node

    def _temp(self) -> str:
        self.count += 1
        return f"tmp{self.count}"

    def _restyle(self, stmt: ast.stmt) -> list[ast.stmt]:
        if getattr(stmt, "lineno", 0) not in self.lines or self.rng.random() < KEPT:
            return [stmt]
        before = []
        for _ in range(self.rng.randint(1, 2)):
            candidates = _hoistable(stmt)
            if not candidates:
                break
            node = self.rng.choice(candidates)
            temp = self._temp()
            before.append(ast.Assign([ast.Name(temp, ast.Store())], node))
            stmt = _Swap(node, ast.Name(temp, ast.Load())).visit(stmt)
        compares = [n for n in ast.walk(stmt) if isinstance(n, ast.Compare)
                    and len(n.ops) == 1 and type(n.ops[0]) in _TURNED]
        for compare in compares if self.rng.random() < 0.5 else []:
            compare.left, compare.comparators = compare.comparators[0], [compare.left]
            compare.ops = [_TURNED[type(compare.ops[0])]()]
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) \
                and self.rng.random() < 0.5:
            load = ast.Name(stmt.target.id, ast.Load())
            stmt = ast.Assign([stmt.target], ast.BinOp(load, stmt.op, stmt.value))
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Name) \
                and self.rng.random() < 0.3:
            before.append(ast.Assert(ast.Compare(ast.Name(stmt.value.id, ast.Load()),
                                                 [ast.IsNot()], [ast.Constant(None)])))
        return [*before, stmt]


def learner_lines(source: str) -> set[int]:
    """The line numbers of the learner's code in a reference module (between its markers)."""
    return {n for b in find_blocks(source) for n in range(b.begin + 1, b.end)}


def restyled(source: str, lines: set[int], rng: random.Random) -> str:
    tree = _Habits(lines, rng).visit(ast.parse(source))
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def by_hand(source: str, variants: dict[str, str]) -> str:
    """`source` with each top-level function of `variants` replaced by its variant."""
    tree = ast.parse(source)
    for name, code in variants.items():
        new = ast.parse(code).body[0]
        tree.body = [new if getattr(n, "name", None) == name else n for n in tree.body]
    return ast.unparse(tree) + "\n"


# --- copies: renamed locals, reordered functions ---------------------------------------------


class _Renamer(ast.NodeTransformer):
    """Renames every local variable a function assigns (not its parameters, not globals)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def visit_FunctionDef(self, node):
        parameters = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        assigned = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Store)} - parameters  # a parameter keeps its name
        names = {name: f"{name}_{self.rng.choice(['v', 'val', 'my', 'x'])}{i}"
                 for i, name in enumerate(sorted(assigned))}
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in names:
                n.id = names[n.id]
        self.generic_visit(node)
        return node


def renamed_copy(source: str, rng: random.Random) -> str:
    """`source` with its locals renamed and its top-level functions in another order."""
    tree = _Renamer(rng).visit(ast.parse(source))
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    order = iter(rng.sample(functions, len(functions)))
    tree.body = [next(order) if isinstance(n, ast.FunctionDef) else n for n in tree.body]
    return ast.unparse(tree) + "\n"


# --- the class -------------------------------------------------------------------------------


def _write(folder: Path, modules: dict[str, str]) -> Path:
    exercises = folder / "exercises"
    exercises.mkdir(parents=True)
    for name, text in modules.items():
        (exercises / name).write_text(text)
    return folder


def _zip(path: Path, modules: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in modules.items():
            archive.writestr(f"exercises/{name}", text)
    return path


def build_class(root: Path, seed: int = 0) -> dict[str, list[str]]:
    """The class's submissions under `root`, and who is what: {kind: names}; the copies as
    "copy:SOURCE" entries of `kinds["copies"]`."""
    rng = random.Random(seed)
    handout = generate()
    reference = {m: (REFERENCE_DIR / m).read_text() for m in MODULES}
    catalogue = load_catalogue()
    alternatives = [e for e in catalogue if isinstance(e, Alternative)]
    mistakes = [e for e in catalogue if isinstance(e, Mistake)]
    rng.shuffle(alternatives)
    works: list[list[Alternative]] = [[] for _ in range(8)]  # each in one learner's work,
    for i, alternative in enumerate(alternatives):  # no two in one work on one function
        functions = {edit.function for edit in alternative.edits}
        work = next(works[(i + k) % 8] for k in range(8) if not functions & {
            edit.function for other in works[(i + k) % 8] for edit in other.edits})
        work.append(alternative)

    def independent(index: int) -> dict[str, str]:
        own = random.Random(1000 + index)
        modules = dict(reference)
        for alternative in works[index] if index < 8 else []:
            name = alternative.section.file_name
            modules[name] = apply_edits(modules[name], alternative, name)
        modules = {m: restyled(text, learner_lines(text), own) for m, text in modules.items()}
        if index < len(HAND):
            name, variants = list(HAND.items())[index]
            modules[name] = by_hand(modules[name], variants)
        return modules

    kinds: dict[str, list[str]] = {k: [] for k in (
        "complete", "partial", "broken", "hostile", "copies", "part_copies", "reference")}
    written: dict[str, dict[str, str]] = {}

    def add(kind: str, name: str, modules: dict[str, str], as_zip: bool = False) -> None:
        if as_zip:
            _zip(root / f"{name}.zip", modules)
        else:
            _write(root / name, modules)
        kinds[kind].append(name)
        written[name] = modules

    for i in range(8):
        add("complete", f"learner{i:02d}", independent(i), as_zip=i % 3 == 0)
    for i in range(4):  # the first sections done, the rest the handout's stubs
        done = independent(8 + i)
        stop = 3 + i % 4
        add("partial", f"partial{i}", {m: done[m] if n < stop else handout[m]
                                       for n, m in enumerate(MODULES, 1)})
    add("partial", "untouched", {m: handout[m] for m in MODULES})
    broken = independent(20)
    broken["s3_bilm.py"] = broken["s3_bilm.py"].replace("def forward(", "def forward(self,,", 1)
    add("broken", "syntax-error", broken)
    for i in range(3):  # wrong code: catalogued mistakes
        wrong = independent(21 + i)
        for mistake in rng.sample(mistakes, 3):
            name = mistake.section.file_name
            try:
                edited = apply_edits(reference[name], mistake, name)
                wrong[name] = restyled(edited, learner_lines(edited), random.Random(i))
            except Exception:  # an edit that does not apply to a restyled module
                continue
        add("broken", f"mistaken{i}", wrong)
    harmful = dict(handout)
    harmful["s1_setup.py"] = (f"import pathlib\npathlib.Path({str(root / HARM)!r})"
                              ".write_text('ran')\n" + handout["s1_setup.py"])
    add("hostile", "harmful", harmful)
    deep = dict(handout)  # parses into a recursion error or refuses to; lexed as it is
    deep["s1_setup.py"] = handout["s1_setup.py"] + "x = " + "(" * 5000 + ")" * 5000 + "\n\0\n"
    add("hostile", "nested", deep)
    huge = dict(handout)
    huge["s2_corpus.py"] = handout["s2_corpus.py"] + "x = 1\n" * 200_000  # over 1 MB
    add("hostile", "huge", huge)
    linked = _write(root / "linked", {m: handout[m] for m in MODULES if m != "s3_bilm.py"})
    (linked / "exercises" / "s3_bilm.py").symlink_to(REFERENCE_DIR / "s3_bilm.py")
    kinds["hostile"].append("linked")
    (root / "link-to-a-classmate").symlink_to(root / "learner01")
    kinds["hostile"].append("link-to-a-classmate")
    sources = ["learner01", "learner02", "learner04", "learner06", "partial1", "partial3"]
    for i, source in enumerate(sources):
        copy = {m: renamed_copy(text, random.Random(i)) for m, text in written[source].items()}
        add("copies", f"copy{i}", copy, as_zip=i % 2 == 1)
        kinds["copies"][-1] = f"copy{i}:{source}"
    add("copies", "copy-of-broken", dict(written["syntax-error"]))  # as it is: it cannot parse
    kinds["copies"][-1] = "copy-of-broken:syntax-error"
    part = independent(30)  # its own work, but sections 4 and 7 renamed from learner05's
    for name in ("s4_pretrain.py", "s7_layer_weights.py"):
        part[name] = renamed_copy(written["learner05"][name], random.Random(9))
    add("part_copies", "part-copy", part)
    kinds["part_copies"][-1] = "part-copy:learner05"
    add("reference", "verbatim", dict(reference))
    add("reference", "reference-renamed", {m: renamed_copy(t, random.Random(7))
                                           for m, t in reference.items()})
    return kinds


@pytest.fixture(scope="module")
def class_of_30(tmp_path_factory):
    root = tmp_path_factory.mktemp("class")
    kinds = build_class(root)
    return root, kinds, similarity.build(similarity.read_class(root))


def test_the_class_is_about_30(class_of_30):
    _, kinds, report = class_of_30
    assert 28 <= len(report["submissions"]) <= 32
    assert sum(map(len, kinds.values())) == len(report["submissions"])


def test_every_copy_pairs_with_its_source(class_of_30):
    """Renamed and reordered copies, and a copy of a submission whose section 3 does not
    parse: that section, compared as it is, is shared whole."""
    _, kinds, report = class_of_30
    pairs = {frozenset((p["a"], p["b"])): p for p in report["pairs"]}
    for entry in kinds["copies"]:
        copy, source = entry.split(":")
        pair = pairs.get(frozenset((copy, source)))
        assert pair, f"{copy}, a copy of {source}, is not paired with it"
        assert min(pair["share_a"], pair["share_b"]) >= similarity.PAIR_AT_LEAST
    broken = pairs[frozenset(("copy-of-broken", "syntax-error"))]["sections"][3]
    assert (broken["share_a"], broken["share_b"]) == (1.0, 1.0)


def test_a_copy_of_two_sections_pairs_by_those_sections(class_of_30):
    _, kinds, report = class_of_30
    copy, source = kinds["part_copies"][0].split(":")
    pair = next(p for p in report["pairs"] if {p["a"], p["b"]} == {copy, source})
    assert min(pair["share_a"], pair["share_b"]) < similarity.PAIR_AT_LEAST
    for number in (4, 7):
        shares = pair["sections"][number]
        assert min(shares["share_a"], shares["share_b"]) >= similarity.SECTION_AT_LEAST


def test_independent_work_and_stubs_do_not_pair(class_of_30):
    _, kinds, report = class_of_30
    copies = {tuple(e.split(":")) for e in kinds["copies"] + kinds["part_copies"]}
    expected = {frozenset(c) for c in copies}
    listed = {frozenset((p["a"], p["b"])) for p in report["pairs"]}
    assert listed == expected, f"unexpected pairs: {listed - expected}"


def test_copies_of_the_reference_are_listed_apart(class_of_30):
    _, kinds, report = class_of_30
    matched = {m["name"] for m in report["reference"]}
    assert set(kinds["reference"]) <= matched
    assert not matched & {*kinds["complete"], *kinds["partial"]}, (
        "independent work is listed as the reference's")
    paired = {n for p in report["pairs"] for n in (p["a"], p["b"])}
    assert not paired & set(kinds["reference"])


def test_stubs_left_as_handed_out_share_nothing(tmp_path):
    """Two copies of the handout, section 3 broken alike in both (compared as it is)."""
    handout = {m: generate()[m] for m in MODULES}
    handout["s3_bilm.py"] = handout["s3_bilm.py"].replace("def forward(", "def forward(,", 1)
    for name in ("alice", "bob"):
        _write(tmp_path / name, handout)
    report = similarity.build(similarity.read_class(tmp_path))
    assert report["pairs"] == [] and report["reference"] == []


def test_nothing_hostile_runs_and_what_cannot_be_read_is_named(class_of_30):
    root, _, report = class_of_30
    assert not (root / HARM).exists()
    skipped = {s["name"]: s for s in report["submissions"]}
    assert "s2_corpus.py" in skipped["huge"]["unreadable"]
    assert "s3_bilm.py" in skipped["linked"]["unreadable"]
    assert "link" in skipped["link-to-a-classmate"]["error"]
    text = similarity.markdown(report)
    assert "huge" in text.split("## Not compared")[1]


# --- shared wrong outputs --------------------------------------------------------------------


def test_a_planted_rare_wrong_output_is_found_and_catalogued_ones_are_marked(tmp_path):
    known = catalogue_known()
    by_section: dict[int, list[Known]] = {}
    for k in known:
        by_section.setdefault(k.section, []).append(k)
    rng = random.Random(3)
    results = []
    common = by_section[2][0]  # a common misconception: six learners make it
    for i in range(30):
        mistakes = [common] if i < 6 else [rng.choice(by_section[s]) for s in (4, 7) if
                                           rng.random() < 0.3]
        results.append(synthetic_result(f"learner{i:02d}", mistakes, known))
    planted = "error: IndexError at s3_bilm.py line 88: `out = x[lengths - t]`"
    for result in (results[11], results[23]):  # a copy and its source
        section = result.sections[2]
        test = section.tests[4]
        section.tests[4] = Record(test.nodeid, test.name, "error", planted)
    path = tmp_path / "grades.json"
    path.write_text(json_report(results, {"sections": [s.number for s in SECTIONS]}))
    groups = similarity.shared_wrong_outputs(read_grades(path), known)
    first = groups[0]
    assert (first["message"], first["submissions"]) == (planted, ["learner11", "learner23"])
    assert not first["catalogued"]
    six = next(g for g in groups if g["submissions"] == [f"learner{i:02d}" for i in range(6)])
    assert common.id in six["catalogued"]
    assert sorted(six["tests"]) == sorted(common.tests)


def test_a_shared_digest_groups_and_another_digest_of_the_same_test_does_not(tmp_path):
    """Three submissions fail one test with the same message (the grader's words for any
    wrong answer); two computed the same wrong tensor (one digest), the third another: only
    the two group, by output. Without digests, the three would group by message."""
    known = catalogue_known()
    results = [synthetic_result(f"learner{i:02d}", [], known) for i in range(10)]
    for result, digest in zip(results[:3], ("0123456789abcdef", "0123456789abcdef",
                                            "fedcba9876543210"), strict=True):
        test = result.sections[2].tests[4]
        result.sections[2].tests[4] = Record(test.nodeid, test.name, "failed",
                                             "failed: AssertionError in the test's checks",
                                             digest)
    path = tmp_path / "grades.json"
    path.write_text(json_report(results, {"sections": [s.number for s in SECTIONS]}))
    read = read_grades(path)
    assert read[2].sections[2].tests[4].reported_digest == "fedcba9876543210"  # kept
    report = similarity.build([], read, known=known)
    assert [(g["by"], g["digest"], g["submissions"]) for g in report["wrong_outputs"]] == [
        ("output", "0123456789abcdef", ["learner00", "learner01"])]
    assert "| output | wrong output 0123456789abcdef |" in similarity.markdown(report)
    for result in results:  # no digest: the message groups all three
        test = result.sections[2].tests[4]
        result.sections[2].tests[4] = replace(test, reported_digest=None)
    groups = similarity.shared_wrong_outputs(results, known)
    assert [(g["by"], g["submissions"]) for g in groups] == [
        ("message", ["learner00", "learner01", "learner02"])]


def test_a_graded_wrong_output_s_digest_reaches_the_json_and_no_learner(tmp_path,
                                                                      grading_work_dir):
    """Through the grader's real path: two submissions with one catalogued mistake of section
    3 (bytes apart: each has its own run) compute the same wrong tensor in a test that
    compares with `assert_close`, a third with another mistake another; the JSON holds each
    one's digest, Gradescope's results.json none, and only the two group by output."""
    from tests.tooling.test_grading import ISOLATION, REFERENCE, grade

    mistakes = {m.id: m for m in load_catalogue()}
    module = REFERENCE_DIR / "s3_bilm.py"
    swapped = apply_edits(REFERENCE["s3_bilm"], mistakes["halves-swapped"], str(module))
    sources = {"swapped_a": swapped, "swapped_b": swapped + "\n# my own copy\n",
               "first_layer": apply_edits(REFERENCE["s3_bilm"],
                                          mistakes["logits-from-the-first-layer"], str(module))}
    for name, source in sources.items():
        (tmp_path / name / "exercises").mkdir(parents=True)
        (tmp_path / name / "exercises" / "s3_bilm.py").write_text(source)
    # A work folder of its own: make check runs another test file's gradings at the same time.
    work, grades, results = grading_work_dir("grading-similarity-tests"), \
        tmp_path / "grades.json", tmp_path / "results.json"
    common = ("--sections", "3", "--isolation", ISOLATION, "--work-dir", str(work), "--quiet")
    grade(*(str(tmp_path / n) for n in sources), *common, "--fresh", "--json", str(grades))
    grade(str(tmp_path / "first_layer"), *common, "--gradescope", str(results))  # as stored
    test = "test_logits_come_from_the_top_layer"
    digests = {s["name"]: next(t["reported_digest"] for t in s["sections"][0]["tests"]
                               if t["name"] == test)
               for s in json.loads(grades.read_text())["submissions"]}
    assert all(re.fullmatch("[0-9a-f]{16}", d) for d in digests.values()), digests
    assert digests["swapped_a"] == digests["swapped_b"] != digests["first_layer"], digests
    assert not [d for d in digests.values() if d in results.read_text()]
    groups = similarity.shared_wrong_outputs(read_grades(grades), [])
    assert [(g["by"], g["submissions"]) for g in groups if test in g["tests"]] == [
        ("output", ["swapped_a", "swapped_b"])]


def test_the_command_writes_both_reports(tmp_path):
    root = tmp_path / "class"
    root.mkdir()
    handout = generate()
    reference = {m: (REFERENCE_DIR / m).read_text() for m in MODULES}
    _write(root / "alice", reference)
    _write(root / "bob", {m: handout[m] for m in MODULES})
    results = [replace(synthetic_result(n, []), path=f"class/{n}") for n in ("alice", "bob")]
    grades = tmp_path / "grades.json"
    grades.write_text(json_report(results, {}))
    out = tmp_path / "out"
    assert similarity.main([str(root), "--grades", str(grades), "--out", str(out)]) == 0
    data = json.loads((out / "similarity.json").read_text())
    assert data["format"] == similarity.FORMAT
    assert [m["name"] for m in data["reference"]] == ["alice"]
    assert data["pairs"] == [] and data["wrong_outputs"] == []
    assert "# Similarity of 2 submissions" in (out / "similarity.md").read_text()


def test_the_handout_is_read_as_generated_and_a_filled_in_one_is_refused(tmp_path):
    assert similarity.read_handout() == {n: t for n, t in generate().items()
                                         if n != similarity.HANDOUT_MANIFEST}
    filled = tmp_path / "exercises"
    shutil.copytree(EXERCISES_DIR, filled)
    (filled / "s3_bilm.py").write_text((REFERENCE_DIR / "s3_bilm.py").read_text())
    with pytest.raises(ValueError, match=r"s3_bilm\.py not as the generator wrote them"):
        similarity.read_handout(filled)
