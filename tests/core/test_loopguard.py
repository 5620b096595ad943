"""LoopGuard as a pure function of the call history."""

from __future__ import annotations

from osiris.core.loopguard import CallRecord, Exemption, LoopConfig, judge


def _call(seq: int, args: str, *, novel: bool = False, error: str | None = None,
          family: str = "Bash:npm run", ref: str | None = "mem://r") -> CallRecord:
    return CallRecord(seq=seq, tool="Bash", args_hash=args, fingerprint=f"{args}{error}",
                      family=family, is_error=error is not None, error_signature=error,
                      error_text=error, novel=novel, ref=ref, mutating=True)


def test_exemption_by_shell_family() -> None:
    history = [_call(i, "watch", novel=i == 0) for i in range(30)]
    config = LoopConfig(exemptions=(Exemption("Bash:npm run*",
                                              ("runaway", "exact_duplicate")),))
    assert [f.pattern for f in judge(history, "Bash", "watch", LoopConfig(),
                                     "Bash:npm run")] == ["exact_duplicate", "runaway"]
    assert judge(history, "Bash", "watch", config, "Bash:npm run") == []
    assert judge(history, "Bash", "watch", config, "Bash:make") != []


def test_alternating_calls_that_keep_teaching_are_not_an_oscillation() -> None:
    learning = [_call(i, "ab"[i % 2], novel=True) for i in range(6)]
    assert judge(learning, "Bash", "a", LoopConfig(), "Bash:npm run") == []
    stuck = [_call(i, "ab"[i % 2], novel=i < 2) for i in range(6)]
    assert [f.pattern for f in judge(stuck, "Bash", "a", LoopConfig(), "Bash:npm run")] == [
        "oscillation"]


def test_failures_are_counted_per_family_since_its_last_success() -> None:
    history = [_call(0, "x", error="E"), _call(1, "x", error="E"),
               _call(2, "y", family="Bash:cat"), _call(3, "x", error="E")]
    patterns = [f.pattern for f in judge(history, "Bash", "x", LoopConfig(), "Bash:npm run")]
    assert patterns == ["repeated_failure"]
    healed = [*history, _call(4, "x", family="Bash:npm run")]
    assert "repeated_failure" not in [f.pattern for f in judge(healed, "Bash", "x", LoopConfig(),
                                                                "Bash:npm run")]
