-- Migration 6: a schedule remembers the id of the job its latest tick enqueued, so that the
-- dashboard's schedules page can link it. The tick's job cannot be found from the tick alone
-- once it has finished: its unique key (schedule:NAME@TIME) is indexed only while the job is
-- live. NULL before a schedule's first tick after this version. Written once and never
-- edited after release.
ALTER TABLE :"schema".schedules ADD COLUMN last_job_id bigint;
