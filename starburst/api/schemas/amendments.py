"""``PATCH /v1/jobs/{id}``: what an update of a waiting job may change (``core.amendments``).

Each field has the very bounds a submission's has (``JobSubmit``: the same ``fields.py``
types and limits), so an update is refused exactly where a submission would be; a field
left out (or null) is unchanged, so an empty body changes nothing.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from starburst.api.schemas.fields import MAX_GPUS, MAX_RUNTIME_S, Label256, whole_number

Gpus = Annotated[int, Field(ge=0, le=MAX_GPUS), BeforeValidator(whole_number)]


class JobUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    gpus: Gpus | None = Field(default=None, description="The GPUs it asks for.")
    time_limit_s: float | None = Field(
        default=None,
        gt=0,
        le=MAX_RUNTIME_S,
        strict=True,
        description="Its hard time limit (seconds of running).",
    )
    name: Label256 | None = Field(default=None, description="Its name.")
