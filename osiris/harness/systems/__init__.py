"""The systems a session is replayed through: OSIRIS's real engine and the peer tools."""
