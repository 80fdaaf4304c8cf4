"""Initial schema: jobs, job events, placements, cloud launches, cost entries, predictions,
model versions, users, teams, API tokens, team budgets and leader terms.

Revision ID: 0001
Revises:
Create Date: 2026-11-30

Written out in full (no imports from starburst) so that it keeps describing this revision
when the models change later.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0001'
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('leader_terms',
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('token', sa.BigInteger(), nullable=False),
    sa.Column('holder', sa.String(length=256), nullable=False),
    sa.Column('acquired_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_leader_terms'))
    )
    op.create_table('model_versions',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('version', sa.String(length=64), nullable=False),
    sa.Column('artifact_uri', sa.String(length=1024), nullable=True),
    sa.Column('metrics', sa.JSON(), nullable=False),
    sa.Column('trained_on', sa.Integer(), nullable=False),
    sa.Column('active', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_model_versions')),
    sa.UniqueConstraint('name', 'version', name='uq_model_versions_name')
    )
    op.create_table('teams',
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_teams'))
    )
    op.create_table('team_budgets',
    sa.Column('team_name', sa.String(length=128), nullable=False),
    sa.Column('monthly_limit_micros', sa.BigInteger(), nullable=False),
    sa.Column('currency', sa.String(length=3), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint('monthly_limit_micros >= 0', name=op.f('ck_team_budgets_non_negative')),
    sa.ForeignKeyConstraint(['team_name'], ['teams.name'], name=op.f('fk_team_budgets_team_name_teams')),
    sa.PrimaryKeyConstraint('team_name', name=op.f('pk_team_budgets'))
    )
    op.create_table('users',
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('team_name', sa.String(length=128), nullable=True),
    sa.Column('email', sa.String(length=256), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['team_name'], ['teams.name'], name=op.f('fk_users_team_name_teams')),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_users'))
    )
    op.create_table('api_tokens',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('user_name', sa.String(length=128), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('prefix', sa.String(length=16), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('label', sa.String(length=128), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True),
    sa.CheckConstraint("role IN ('admin', 'user', 'finance')", name=op.f('ck_api_tokens_role')),
    sa.ForeignKeyConstraint(['user_name'], ['users.name'], name=op.f('fk_api_tokens_user_name_users')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_tokens')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_api_tokens_token_hash'))
    )
    op.create_index(op.f('ix_api_tokens_user_name'), 'api_tokens', ['user_name'], unique=False)
    op.create_table('jobs',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('idempotency_key', sa.String(length=200), nullable=True),
    sa.Column('name', sa.String(length=256), nullable=True),
    sa.Column('user_name', sa.String(length=128), nullable=True),
    sa.Column('team_name', sa.String(length=128), nullable=True),
    sa.Column('image', sa.String(length=512), nullable=True),
    sa.Column('command', sa.Text(), nullable=True),
    sa.Column('gpus', sa.Integer(), nullable=False),
    sa.Column('cpus', sa.Float(), nullable=False),
    sa.Column('memory_mb', sa.Float(), nullable=False),
    sa.Column('gpu_type', sa.String(length=64), nullable=True),
    sa.Column('declared_runtime', sa.Float(), nullable=True),
    sa.Column('deadline', sa.DateTime(timezone=True), nullable=True),
    sa.Column('extra', sa.JSON(), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('submitted_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('queued_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('runtime', sa.Float(), nullable=True),
    sa.Column('predicted_runtime', sa.Float(), nullable=True),
    sa.Column('wait_budget', sa.Float(), nullable=True),
    sa.Column('ran_on', sa.String(length=16), nullable=True),
    sa.CheckConstraint("state IN ('submitted', 'queued', 'running_onprem', 'bursting', 'running_cloud', 'succeeded', 'failed', 'cancelled')", name=op.f('ck_jobs_state')),
    sa.CheckConstraint('gpus >= 0', name=op.f('ck_jobs_gpus')),
    sa.ForeignKeyConstraint(['team_name'], ['teams.name'], name=op.f('fk_jobs_team_name_teams')),
    sa.ForeignKeyConstraint(['user_name'], ['users.name'], name=op.f('fk_jobs_user_name_users')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_jobs')),
    sa.UniqueConstraint('idempotency_key', name=op.f('uq_jobs_idempotency_key'))
    )
    op.create_index('ix_jobs_queue', 'jobs', ['state', 'queued_at', 'id'], unique=False)
    op.create_index(op.f('ix_jobs_team_name'), 'jobs', ['team_name'], unique=False)
    op.create_index(op.f('ix_jobs_user_name'), 'jobs', ['user_name'], unique=False)
    op.create_table('cloud_launches',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('job_id', sa.String(length=64), nullable=False),
    sa.Column('name', sa.String(length=256), nullable=False),
    sa.Column('provider', sa.String(length=64), nullable=False),
    sa.Column('region', sa.String(length=64), nullable=True),
    sa.Column('instance_type', sa.String(length=128), nullable=True),
    sa.Column('accelerators', sa.String(length=128), nullable=False),
    sa.Column('hourly_price_micros', sa.BigInteger(), nullable=False),
    sa.Column('currency', sa.String(length=3), nullable=False),
    sa.Column('spot', sa.Boolean(), nullable=False),
    sa.Column('request_id', sa.String(length=128), nullable=True),
    sa.Column('cloud_job_id', sa.String(length=128), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('launched_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('ended_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('fencing_token', sa.BigInteger(), nullable=True),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_cloud_launches_job_id_jobs')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_cloud_launches'))
    )
    op.create_index(op.f('ix_cloud_launches_job_id'), 'cloud_launches', ['job_id'], unique=False)
    op.create_table('job_events',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('job_id', sa.String(length=64), nullable=False),
    sa.Column('at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('from_state', sa.String(length=16), nullable=True),
    sa.Column('to_state', sa.String(length=16), nullable=False),
    sa.Column('reason', sa.Text(), nullable=False),
    sa.Column('actor', sa.String(length=128), nullable=False),
    sa.Column('fencing_token', sa.BigInteger(), nullable=True),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_job_events_job_id_jobs')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_job_events'))
    )
    op.create_index(op.f('ix_job_events_job_id'), 'job_events', ['job_id'], unique=False)
    op.create_table('placements',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('job_id', sa.String(length=64), nullable=False),
    sa.Column('attempt', sa.Integer(), nullable=False),
    sa.Column('part', sa.Integer(), nullable=False),
    sa.Column('node_index', sa.Integer(), nullable=False),
    sa.Column('node_name', sa.String(length=256), nullable=False),
    sa.Column('gpus', sa.Integer(), nullable=False),
    sa.Column('cpus', sa.Float(), nullable=False),
    sa.Column('memory_mb', sa.Float(), nullable=False),
    sa.Column('placed_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('fencing_token', sa.BigInteger(), nullable=True),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_placements_job_id_jobs')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_placements')),
    sa.UniqueConstraint('job_id', 'attempt', 'part', name='uq_placements_part')
    )
    op.create_index(op.f('ix_placements_job_id'), 'placements', ['job_id'], unique=False)
    op.create_table('predictions',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('job_id', sa.String(length=64), nullable=False),
    sa.Column('model_version_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('source', sa.String(length=32), nullable=False),
    sa.Column('value', sa.Float(), nullable=False),
    sa.Column('low', sa.Float(), nullable=False),
    sa.Column('high', sa.Float(), nullable=False),
    sa.Column('quantiles', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_predictions_job_id_jobs')),
    sa.ForeignKeyConstraint(['model_version_id'], ['model_versions.id'], name=op.f('fk_predictions_model_version_id_model_versions')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_predictions'))
    )
    op.create_index(op.f('ix_predictions_job_id'), 'predictions', ['job_id'], unique=False)
    op.create_table('cost_entries',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('job_id', sa.String(length=64), nullable=False),
    sa.Column('launch_id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=True),
    sa.Column('source', sa.String(length=32), nullable=False),
    sa.Column('user_name', sa.String(length=128), nullable=True),
    sa.Column('team_name', sa.String(length=128), nullable=True),
    sa.Column('cloud', sa.String(length=64), nullable=False),
    sa.Column('region', sa.String(length=64), nullable=True),
    sa.Column('period_start', sa.DateTime(timezone=True), nullable=False),
    sa.Column('period_end', sa.DateTime(timezone=True), nullable=False),
    sa.Column('gpu_hours', sa.Float(), nullable=False),
    sa.Column('amount_micros', sa.BigInteger(), nullable=False),
    sa.Column('currency', sa.String(length=3), nullable=False),
    sa.CheckConstraint('period_end >= period_start', name=op.f('ck_cost_entries_interval')),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_cost_entries_job_id_jobs')),
    sa.ForeignKeyConstraint(['launch_id'], ['cloud_launches.id'], name=op.f('fk_cost_entries_launch_id_cloud_launches')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_cost_entries')),
    sa.UniqueConstraint('job_id', 'source', 'period_start', name='uq_cost_entries_interval')
    )
    op.create_index('ix_cost_entries_period', 'cost_entries', ['period_start'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_cost_entries_period', table_name='cost_entries')
    op.drop_table('cost_entries')
    op.drop_index(op.f('ix_predictions_job_id'), table_name='predictions')
    op.drop_table('predictions')
    op.drop_index(op.f('ix_placements_job_id'), table_name='placements')
    op.drop_table('placements')
    op.drop_index(op.f('ix_job_events_job_id'), table_name='job_events')
    op.drop_table('job_events')
    op.drop_index(op.f('ix_cloud_launches_job_id'), table_name='cloud_launches')
    op.drop_table('cloud_launches')
    op.drop_index(op.f('ix_jobs_user_name'), table_name='jobs')
    op.drop_index(op.f('ix_jobs_team_name'), table_name='jobs')
    op.drop_index('ix_jobs_queue', table_name='jobs')
    op.drop_table('jobs')
    op.drop_index(op.f('ix_api_tokens_user_name'), table_name='api_tokens')
    op.drop_table('api_tokens')
    op.drop_table('users')
    op.drop_table('team_budgets')
    op.drop_table('teams')
    op.drop_table('model_versions')
    op.drop_table('leader_terms')
