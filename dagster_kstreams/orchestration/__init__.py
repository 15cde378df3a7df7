"""The Dagster layer: a topology becomes partitioned assets (translator, factory, resources, checks)."""
