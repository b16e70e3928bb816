from django import template

register = template.Library()


@register.filter
def lookup(mapping, key):
    """{{ row.backends|lookup:name }}: dictionary access with a variable key."""
    return mapping.get(key) if mapping else None


@register.filter
def score(value, digits: int = 1):
    return "—" if value is None else f"{value:.{digits}f}"
