"""Client side: Session, feeds and fetches, run options."""
