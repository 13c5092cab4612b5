"""Services: pure logic placed on devices (no Ray here; the runtime hosts them)."""
