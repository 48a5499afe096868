"""The warnings a passing gate raises (pytest's warnings summary lists them; ``-W error::...`` turns them into
failures). Their public names are ``pytest_bvtest.plugin.GateWithinNoiseWarning`` and so on."""

from __future__ import annotations


class GateWithinNoiseWarning(UserWarning):
    """A gate whose point estimate is past its bound while its interval is not (Anserini's OK*)."""


class GateUndecidedWarning(UserWarning):
    """A gate whose verdict the missing judgments decide (UNDECIDED, docs/judgments.md): it passes or fails
    depending on whether the unjudged documents of the candidate's or the reference's top d are relevant; with
    ``judgments: {undecided: warn}`` (the default) it passes with this warning."""


class GateGuardWarning(UserWarning):
    """A gate that passed while a guard warns not to trust the pass (OK*): an identical candidate,
    topics no system answers, a stale reference, a target constant that rewards worse systems."""
