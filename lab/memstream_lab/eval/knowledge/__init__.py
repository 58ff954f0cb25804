"""`memstream eval knowledge`: the knowledge-update set through the pipeline, scored per kind."""
