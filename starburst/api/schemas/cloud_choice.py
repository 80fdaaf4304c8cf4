"""Where a submitted job may run if it bursts (``JobSubmit.cloud_choice``): a SkyPilot task's
``resources.use_spot``, ``cloud``, ``region`` and ``disk_size``.

They matter only in the cloud: a job that starts on-prem ignores them. They travel in
``Job.extra`` under ``starburst.core.cloud_choice``'s words. A region needs its cloud (as
SkyPilot's ``infra: aws/us-east-1`` says both); a choice no cloud can price is refused at
submission, with the reason (``starburst.api.submit_ceilings.check_choice``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from starburst.api.schemas.fields import whole_number
from starburst.core.cloud_choice import cloud_extra

CloudName = Annotated[str, Field(min_length=1, max_length=32, pattern=r"^[A-Za-z][A-Za-z0-9_-]*$")]
RegionName = Annotated[
    str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
]
MAX_DISK_GB = 65_536


class CloudChoice(BaseModel):
    """A burst job's cloud, region, spot-ness and disk (unset: the server's defaults)."""

    model_config = ConfigDict(extra="forbid")

    use_spot: bool | None = Field(
        default=None,
        strict=True,
        description="Rent spot GPUs (true) or on-demand ones (false); unset: the server's "
        "use_spot setting.",
    )
    cloud: CloudName | None = Field(default=None, description="Burst only to this cloud (aws).")
    region: RegionName | None = Field(
        default=None, description="Burst only to this region of `cloud` (us-east-1)."
    )
    disk_size_gb: (
        Annotated[int, Field(ge=1, le=MAX_DISK_GB), BeforeValidator(whole_number)] | None
    ) = Field(default=None, description="The cloud machine's disk, in GB.")

    @model_validator(mode="after")
    def _region_needs_cloud(self) -> CloudChoice:
        if self.region is not None and self.cloud is None:
            raise ValueError("a region needs its cloud (cloud: aws, region: us-east-1)")
        return self

    def extra(self) -> dict[str, str]:
        return cloud_extra(self.use_spot, self.cloud, self.region, self.disk_size_gb)
