"""Spec 13.1 / section 17 group K2: the process-wide log callback."""

import threading

import pytest

import ovstage as ov
from ovstage import _native


class Recorder:
    """A callback recording (severity, timestamp, message, thread id)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.items = []

    def __call__(self, severity, timestamp, message):
        with self.lock:
            self.items.append((severity, timestamp, message, threading.get_ident()))

    def messages(self, marker=""):
        with self.lock:
            return [m for _, _, m, _ in self.items if marker in m]


@pytest.fixture
def log():
    rec = Recorder()
    yield rec
    ov.set_log_callback(None)


def test_delivery_is_on_another_thread_with_the_documented_arguments(log):
    ov.set_log_callback(log, ov.LogSeverity.INFO)
    with ov.Stage("logged-stage"):
        pass
    assert ov.flush_log() is True
    created = [it for it in log.items if "logged-stage" in it[2] and "created" in it[2]]
    assert created, log.items
    severity, timestamp, message, thread = created[0]
    assert severity is ov.LogSeverity.INFO and type(severity) is ov.LogSeverity
    assert isinstance(timestamp, float) and timestamp > 1.0e9
    assert isinstance(message, str) and "ovstage-rs" in message
    assert thread != threading.get_ident()


def test_severity_threshold_and_channel_rules(log):
    ov.set_log_callback(log)  # default threshold: WARNING
    _native._log_message(int(ov.LogSeverity.INFO), "test.quiet", "k2-info-dropped")
    _native._log_message(int(ov.LogSeverity.WARNING), "test.quiet", "k2-warning-kept")
    with ov.Stage("below-threshold"):
        pass
    assert ov.flush_log()
    assert log.messages("k2-") == ["[test.quiet] k2-warning-kept"]
    assert not log.messages("below-threshold"), "stage creation is INFO, below WARNING"

    ov.set_log_callback(log, ov.LogSeverity.ERROR, "test.chatty=verbose, test.muted=none")
    _native._log_message(int(ov.LogSeverity.VERBOSE), "test.chatty.sub", "k3-verbose-kept")
    _native._log_message(int(ov.LogSeverity.WARNING), "test.other", "k3-warning-dropped")
    _native._log_message(int(ov.LogSeverity.ERROR), "test.muted", "k3-error-muted")
    _native._log_message(int(ov.LogSeverity.ERROR), "test.other", "k3-error-kept")
    assert ov.flush_log()
    assert log.messages("k3-") == ["[test.chatty.sub] k3-verbose-kept", "[test.other] k3-error-kept"]


def test_a_failed_op_is_logged_as_a_warning(log):
    ov.set_log_callback(log)
    with ov.Stage("failing") as stage:
        with pytest.raises(ov.OvstageError):
            stage.clone("/DoesNotExist", ["/Target"], 1)
    assert ov.flush_log()
    failures = [it for it in log.items if "[ovstage.ops]" in it[2] and "/DoesNotExist" in it[2]]
    assert failures and failures[0][0] == ov.LogSeverity.WARNING, log.items


def test_argument_errors_change_nothing(log):
    ov.set_log_callback(log)
    other = Recorder()
    for bad in ("ovstage", "ovstage=loud", "=info"):
        with pytest.raises(ov.OvstageError) as e:
            ov.set_log_callback(other, ov.LogSeverity.VERBOSE, bad)
        assert e.value.code == ov.ErrorCode.INVALID_ARGUMENT
    for bad in (2, 4, -3, 1.0, "WARNING"):
        with pytest.raises(ValueError):
            ov.set_log_callback(other, bad)
    with pytest.raises(TypeError):
        ov.set_log_callback(other, None, 5)
    with pytest.raises(TypeError):
        ov.set_log_callback(42)
    # The first callback and its threshold are still the installed ones.
    _native._log_message(int(ov.LogSeverity.WARNING), "test", "k4-still-first")
    _native._log_message(int(ov.LogSeverity.VERBOSE), "test", "k4-verbose-dropped")
    assert ov.flush_log()
    assert log.messages("k4-") == ["[test] k4-still-first"]
    assert other.items == []


def test_none_disables_delivery(log):
    ov.set_log_callback(log, ov.LogSeverity.VERBOSE)
    _native._log_message(int(ov.LogSeverity.ERROR), "test", "k5-before")
    ov.set_log_callback(None)  # flushes what is pending
    assert log.messages("k5-") == ["[test] k5-before"]
    _native._log_message(int(ov.LogSeverity.ERROR), "test", "k5-after")
    with ov.Stage("unlogged"):
        pass
    assert ov.flush_log() is True
    assert log.messages("k5-after") == [] and log.messages("unlogged") == []


def test_flush_log_return_values_and_argument_checks(log):
    assert ov.flush_log() is True, "no callback: nothing to wait for"
    assert ov.flush_log(0) is True
    entered, gate = threading.Event(), threading.Event()

    def blocking(severity, timestamp, message):
        entered.set()
        gate.wait(10)
        log(severity, timestamp, message)

    ov.set_log_callback(blocking)
    _native._log_message(int(ov.LogSeverity.ERROR), "test", "k6-held")
    assert entered.wait(10), "the dispatcher started delivering"
    # The message is in flight: a bounded flush runs out (and releases the
    # GIL meanwhile, or this thread could not get here again).
    assert ov.flush_log(0) is False
    assert ov.flush_log(20_000_000) is False
    gate.set()
    assert ov.flush_log() is True
    assert log.messages("k6-") == ["[test] k6-held"]
    with pytest.raises(TypeError):
        ov.flush_log(1.0)
    with pytest.raises(TypeError):
        ov.flush_log(None)
    with pytest.raises(ValueError):
        ov.flush_log(-1)
    with pytest.raises(ValueError):
        ov.flush_log(1 << 64)


def test_callback_exceptions_are_printed_not_raised(log, capsys):
    calls = []

    def failing(severity, timestamp, message):
        calls.append(message)
        if "k7-boom" in message:
            raise RuntimeError("k7 callback failure")

    ov.set_log_callback(failing)
    _native._log_message(int(ov.LogSeverity.ERROR), "test", "k7-boom")
    _native._log_message(int(ov.LogSeverity.ERROR), "test", "k7-next")
    assert ov.flush_log() is True
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: k7 callback failure" in err and "in failing" in err
    assert [m for m in calls if "k7-" in m] == ["[test] k7-boom", "[test] k7-next"], "delivery went on"


def test_replacing_the_callback_switches_delivery(log):
    first, second = Recorder(), Recorder()
    ov.set_log_callback(first)
    _native._log_message(int(ov.LogSeverity.ERROR), "test", "k8-one")
    ov.set_log_callback(second)
    _native._log_message(int(ov.LogSeverity.ERROR), "test", "k8-two")
    assert ov.flush_log()
    assert second.messages("k8-two") == ["[test] k8-two"]
    assert first.messages("k8-two") == []
    assert len(first.messages("k8-one")) + len(second.messages("k8-one")) == 1


def test_a_callback_may_flush_and_remove_itself(log):
    done = threading.Event()
    seen = []

    def reentrant(severity, timestamp, message):
        if "k9-remove" in message:
            seen.append(ov.flush_log(0))  # cannot drain its own delivery
            ov.set_log_callback(None)
            done.set()

    ov.set_log_callback(reentrant)
    _native._log_message(int(ov.LogSeverity.ERROR), "test", "k9-remove")
    assert done.wait(10), "no deadlock"
    assert seen == [False]
    assert ov.flush_log() is True
