"""F tests of the judge main effect (paper App. G), or the Wald F of the REML judge offsets."""

from __future__ import annotations

from typing import Any

from cjstats.reporting.items import format_table, text

_HOW = {"anova": "F = MS_J / MS_W with (K - 1, (n m - 1)(K - 1)) degrees of freedom (paper App. G)",
        "reml": "Wald F of the judge offsets from the REML fit, which keeps every call, with Satterthwaite "
                "denominator degrees of freedom (lmerTest); on a balanced table it is the F of paper App. G"}


def render(inputs: Any) -> list[dict[str, Any]]:
    ft = inputs.judge_tests
    return [*(text(_HOW[m] + ".") for m in dict.fromkeys(ft["method"])),
            format_table(ft, caption="judge main effect")]
