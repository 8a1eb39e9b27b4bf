"""The rehearsal's table: every line says it is a plumbing and cost rehearsal, not a score."""

from __future__ import annotations

from prefcraft.experiments.rehearsal.run import RehearsalOutcome, RoleCost, Tokens

HEADLINE = ("REHEARSAL, NOT A SCORE: plumbing and cost on synthetic data and an instant server on loopback; no number "
            "below measures a model")
MARK = "[rehearsal, not a score]"
ESTIMATE = "paper_scale_cost.json x share: calls/prompt/compl."


def format_rehearsal(outcome: RehearsalOutcome) -> str:
    items = ", ".join(f"{count:,} {name}" for name, count in outcome.data.items.items())
    lines = [f"{outcome.path} at scale {outcome.scale:g} of the paper's size ({items}; work folder {outcome.work_dir})",
             f"faults injected: {_faults(outcome)}",
             f"{'role':<7}{'requests':>10}{'prompt tok':>13}{'compl. tok':>12}  {ESTIMATE:<44}{'longest prompt':>15}"
             f"{'+max_tokens':>12}  context; the file's model",
             *map(_role_line, outcome.roles),
             f"{'step':<22}{'LM calls':>10}{'prompt tok':>13}{'compl. tok':>12}{'seconds':>9}{'failed items':>14}",
             *(f"{step.step:<22}{step.usage.calls:>10,}{step.usage.prompt_tokens:>13,}"
               f"{step.usage.completion_tokens:>12,}{step.seconds:>9.1f}{step.failed_items:>14,}"
               for step in outcome.steps),
             f"wall {outcome.wall_s:.1f} s; CPU {outcome.cpu_s:.1f} s"
             + (f", {outcome.cpu_ms_per_call:.1f} ms per request (the instant server's threads included)"
                if outcome.cpu_ms_per_call is not None else "")
             + f"; peak RSS {outcome.peak_rss_mib:,.0f} MiB; LM cache {outcome.cache_bytes / 2**20:,.1f} MiB on disk",
             f"faults met: {_faults_met(outcome)}; failed items counted by the steps: "
             f"{sum(step.failed_items for step in outcome.steps):,}",
             *outcome.notes,
             "every step ran to the end" if outcome.error is None
             else f"STOPPED by an unhandled error: {outcome.error}"]
    return "\n".join([HEADLINE, *(f"{MARK} {line}" for line in lines)])


def _faults(outcome: RehearsalOutcome) -> str:
    faults = outcome.faults
    given = [f"context {faults.context_tokens:,} tokens" if faults.context_tokens else "",
             f"HTTP 500 on {faults.error_rate:.0%} of requests" if faults.error_rate else "",
             f"{faults.cut_rate:.0%} of replies cut at max_tokens" if faults.cut_rate else ""]
    return ", ".join(filter(None, given)) or "none"


def _faults_met(outcome: RehearsalOutcome) -> str:
    met = [f"{role.role} {kind} {count:,}" for role in outcome.roles for kind, count in sorted(role.faults.items())]
    return ", ".join(met) or "none"


def _role_line(role: RoleCost) -> str:
    context = role.context
    needed = role.longest_prompt_tokens + role.max_tokens
    over = " OVER" if context.tokens is not None and needed > context.tokens else ""
    window = f"{context.tokens:,} ({context.source}){over}" if context.tokens else context.source
    return (f"{role.role:<7}{role.sent.calls:>10,}{role.sent.prompt_tokens:>13,}{role.sent.completion_tokens:>12,}  "
            f"{_estimate(role.estimate):<44}{role.longest_prompt_tokens:>15,}{needed:>12,}  {window}; {role.model}")


def _estimate(estimate: Tokens | None) -> str:
    if estimate is None:
        return "none in paper_scale_cost.json"
    return f"{estimate.calls:,} / {estimate.prompt_tokens:,} / {estimate.completion_tokens:,}"
