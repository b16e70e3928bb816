from django import template

register = template.Library()


@register.filter
def get(mapping, key):
    return mapping.get(key, "") if isinstance(mapping, dict) else ""


@register.simple_tag
def checked(answers, question: str, option: str) -> str:
    """' checked' when the posted answer to `question` is or contains `option` (the form is shown again after a problem)."""
    value = answers.get(question) if isinstance(answers, dict) else None
    return " checked" if value == option or (isinstance(value, list) and option in value) else ""
