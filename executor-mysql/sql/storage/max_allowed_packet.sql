-- The server's `max_allowed_packet`, in bytes.
SELECT CAST(@@max_allowed_packet AS SIGNED) AS packet
