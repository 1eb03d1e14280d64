"""`amqp-conformance replay`: a saved reproducer, found by path or by name under <reports-dir>/reproducers,
run again against a broker by URL: exit 1 while the broker still breaks the requirement, 0 once it does not;
a file that is not a reproducer is exit 12, a missing one exit 2."""

from __future__ import annotations

from conformance.cli import main
from conformance.errors import EXIT_BAD_RESULTS, EXIT_MUST_FAILED, EXIT_OK, EXIT_USAGE
from conformance.explore import save_reproducer
from conformance.reference.broker import Faults
from conformance.reference.listener import ReferenceBroker

STEPS = [["grant", 3], ["stale", 2, 3], ["consume", 10]]   # credit is set from the delivery-count: 1 more, not 3


def test_replay_by_name_under_the_reports_dir(tmp_path, capsys):
    saved = save_reproducer(STEPS, "2.6.7/credit-formula", tmp_path / "reproducers")
    with ReferenceBroker(faults=Faults(cumulative_credit=True)) as adding:
        assert main(["replay", saved.name, "--broker", adding.url, "--reports-dir", str(tmp_path)]) == EXIT_MUST_FAILED
    out = capsys.readouterr().out
    assert out.startswith(f"FAIL {saved.name} on 127.0.0.1:") and "2.6.7/no-send-without-credit (MUST)" in out
    with ReferenceBroker() as correct:
        assert main(["replay", str(saved), "--broker", correct.url, "--quiet-period", "0.2"]) == EXIT_OK
    assert capsys.readouterr().out.startswith(f"PASS {saved.name}")


def test_replay_bad_input(tmp_path, capsys):
    assert main(["replay", "no-such.json", "--reports-dir", str(tmp_path)]) == EXIT_USAGE
    (tmp_path / "x.json").write_text('{"steps": 3}')
    assert main(["replay", str(tmp_path / "x.json")]) == EXIT_BAD_RESULTS
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "no reproducer at no-such.json" in err and "is not a reproducer" in err
