# A Sidekiq job as its team keeps it: five retries, each waiting 10 s times
# the retry number (plus Sidekiq's own jitter), instead of count ** 4 + 15.
class ReportWorker
  include Sidekiq::Job
  sidekiq_options retry: 5, queue: 'reports', backtrace: true

  sidekiq_retry_in { |count| 10 * (count + 1) }

  def perform(report_id)
    Report.find(report_id).publish!
  end
end
