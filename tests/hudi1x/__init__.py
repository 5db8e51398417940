"""Event-time compaction and the table services on Hudi 1.x tables (versions 8 and 9)."""
