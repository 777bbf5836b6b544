-- Commits the limited claim.
COMMIT
