"""The representative scripts of spec section 17.2 (tests/scripts): each runs in
its own interpreter and its stdout must equal the recorded NAME.expected."""
import pathlib
import subprocess
import sys

import pytest

SCRIPTS = pathlib.Path(__file__).parent / "scripts"
CASES = [(p.stem, []) for p in sorted(SCRIPTS.glob("*.py"))] + [("producer_consumer", ["--threads"])]


def test_every_script_has_an_expected_output():
    names = {p.stem for p in SCRIPTS.glob("*.py")}
    assert len(names) == 10, sorted(names)
    assert names == {p.stem for p in SCRIPTS.glob("*.expected")}


@pytest.mark.parametrize("name,args", CASES, ids=[" ".join([n] + a) for n, a in CASES])
def test_script_output(name, args):
    run = subprocess.run([sys.executable, "-W", "error::ResourceWarning", str(SCRIPTS / f"{name}.py"), *args],
                         capture_output=True, text=True, timeout=600, cwd=SCRIPTS)
    assert run.returncode == 0, run.stderr
    expected = (SCRIPTS / f"{name}.expected").read_text()
    assert run.stdout == expected, run.stderr
