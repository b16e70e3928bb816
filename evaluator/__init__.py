"""AtelierEval's evaluation library: rendering backends, AtelierJudge and metrics.

Plain Python on purpose: nothing in this package imports Django, so a researcher
can use it from a notebook or a command line without the web application.
"""
