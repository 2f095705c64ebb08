"""Check engine: scheduling, workers, result ingestion and the pure status machine."""
