-- Engine work carries the trace it was queued in (issue 28, OpenTelemetry): a job scheduled,
-- or an event published, during an engine call keeps that call's W3C `traceparent`, and the
-- run of the item continues the trace. NULL when tracing is off or nothing was traced.
ALTER TABLE engine_work ADD COLUMN traceparent TEXT;
