from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

DataType = Literal["monitoring_data", "incident_data", "alert_history", "check_results"]


class RetentionMetadata(BaseModel):
    count: int = Field(description="Records that go at `expiryDate`.")
    sizeBytes: int = Field(description="Their size in bytes (a per-row estimate).")


class RetentionNotificationOut(BaseModel):
    """A batch of the caller's data that expires at `expiryDate` (seed 19)."""

    model_config = ConfigDict(
        json_schema_extra={
            "example": {
                "id": "5c1f0c8a9d2e4b7f8a6e3d2c1b0a9f8e",
                "userId": "0b8e6d4c2a1f4e3d9c8b7a6f5e4d3c2b",
                "dataType": "check_results",
                "expiryDate": "2026-12-07T00:00:00Z",
                "notified": True,
                "retryCount": 0,
                "lastNotificationAttempt": "2026-11-30T00:10:02Z",
                "metadata": {"count": 43200, "sizeBytes": 6048000},
                "createdAt": "2026-11-30T00:10:00Z",
                "updatedAt": "2026-11-30T00:10:00Z",
            }
        }
    )

    id: str
    userId: str
    dataType: DataType
    expiryDate: datetime = Field(
        description="When the data goes: a Monday, 00:00 UTC, at least seven days after the "
        "notice was made."
    )
    notified: bool = Field(description="The owner's e-mail about it was delivered.")
    retryCount: int = Field(description="Failed delivery attempts of that e-mail.")
    lastNotificationAttempt: datetime = Field(
        description="The last delivery attempt of the e-mail; until the first one, when it "
        "was queued."
    )
    metadata: RetentionMetadata
    createdAt: datetime
    updatedAt: datetime
