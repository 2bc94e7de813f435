"""The steps of the request path a scenario rule is tried at (api/pipeline.py tries each phase's rules at its
step), and the phase of a rule that names none."""

BEFORE_AUTH, AFTER_VALIDATION, AFTER_HANDLER = "before_auth", "after_validation", "after_handler"
PHASES = (BEFORE_AUTH, AFTER_VALIDATION, AFTER_HANDLER)     # in the order a call meets them


def phase_of(raw):
    """A rule's phase: the one it names, else after_handler for a rule that patches the handler's reply (it needs
    one: world/scripted.py), else after_validation."""
    effect = raw.get("effect")
    return raw.get("phase", AFTER_HANDLER if isinstance(effect, dict) and "patch" in effect else AFTER_VALIDATION)
