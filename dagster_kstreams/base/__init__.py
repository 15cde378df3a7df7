"""The bottom layer: where the project keeps its files and the JVM artifacts it needs.

``home`` is the state home (``$DAGSTER_KSTREAMS_HOME``) and the user-fixable ``LocalStackError``;
``jars`` resolves the jar sets from the poms in ``jvm/`` with Maven. Every other layer may import
from here; this package imports no other layer.
"""
