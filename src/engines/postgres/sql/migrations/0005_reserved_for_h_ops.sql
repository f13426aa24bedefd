-- Migration 5: RESERVED for the migration of branch h-ops (issue 22, metrics), written in
-- parallel. A placeholder so that migration 6 builds and is tested on branch h-pages: delete
-- this file when merging h-ops's 0005 (EmbedSql.cmake refuses two migrations numbered 5).
SELECT 1;
