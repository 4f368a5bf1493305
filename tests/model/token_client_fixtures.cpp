#include "tests/model/token_client_fixtures.hpp"

namespace rehearse::sim::token_test {

Task<void> send_request(TokenClient& client, ServiceRequest request,
                        std::optional<ServiceResult>& out) {
  ServiceResult result = co_await client.request(std::move(request));
  out.emplace(std::move(result));
}

}  // namespace rehearse::sim::token_test
