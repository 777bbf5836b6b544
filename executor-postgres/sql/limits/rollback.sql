-- Rolls the limited claim back.
ROLLBACK
