"""Mail that is never dropped: the outbox table's queries and the sender that retries with
back-off. Above the models (it stores rows), below every domain that writes mail."""
