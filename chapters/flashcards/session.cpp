// The session of session.h: planning it, counting, and applying one action at a time.
#include "chapters/flashcards/session.h"

#include "chapters/flashcards/text.h"  // trim

#include <algorithm>

namespace cards {

Plan plan_session(const Deck& deck, const Progress& p, int session) {
    std::vector<int> due, fresh, later;
    for (size_t i = 0; i < deck.cards.size(); i++) {
        auto it = p.cards.find(deck.cards[i].number);
        if (it == p.cards.end())
            fresh.push_back(int(i));
        else if (due_in(it->second) <= session)
            due.push_back(int(i));
        else
            later.push_back(int(i));
    }
    auto state = [&](int i) { return p.cards.at(deck.cards[size_t(i)].number); };
    std::stable_sort(due.begin(), due.end(), [&](int a, int b) {
        CardState x = state(a), y = state(b);
        if (x.box != y.box) return x.box < y.box;
        return due_in(x) < due_in(y);  // longer overdue first; ties keep deck order
    });
    std::stable_sort(later.begin(), later.end(),
                     [&](int a, int b) { return due_in(state(a)) < due_in(state(b)); });
    Plan plan;
    plan.order = due;
    plan.order.insert(plan.order.end(), fresh.begin(), fresh.end());
    plan.today = int(plan.order.size());
    plan.order.insert(plan.order.end(), later.begin(), later.end());
    return plan;
}

Counts count(const Deck& deck, const Progress& p, int session) {
    Counts c;
    for (const Card& card : deck.cards) {
        auto it = p.cards.find(card.number);
        if (it == p.cards.end()) {
            c.box[0]++;
            continue;
        }
        const CardState& s = it->second;
        c.seen++;
        c.box[size_t(s.box)]++;
        if (s.last == Rating::Easy) c.easy++;
        if (s.last == Rating::Medium) c.medium++;
        if (s.last == Rating::Hard) c.hard++;
        if (due_in(s) <= session) c.due++;
    }
    return c;
}

std::string stats_text(const Deck& deck, const Progress& p, const std::string& progress_path) {
    int next = next_session(p.session);
    Counts c = count(deck, p, next);
    int n = int(deck.cards.size());
    std::string s;
    s += "덱: " + deck.path + " (" + std::to_string(n) + "장)\n";
    s += "진도 파일: " + progress_path + "\n";
    s += "지난 세션: " + std::to_string(p.session) + " (다음은 세션 " + std::to_string(next) +
         ")\n";
    s += "본 카드 " + std::to_string(c.seen) + "/" + std::to_string(n) + ", 쉬움 " +
         std::to_string(c.easy) + ", 보통 " + std::to_string(c.medium) + ", 어려움 " +
         std::to_string(c.hard) + "\n";
    s += "새 카드: " + std::to_string(c.box[0]) + "장\n";
    for (int b = 1; b <= BOXES; b++) {
        std::string every = b == 1 ? "매 세션" : std::to_string(interval(b)) + "세션마다";
        s += "상자 " + std::to_string(b) + " (" + every + "): " + std::to_string(c.box[size_t(b)]) +
             "장\n";
    }
    s += "세션 " + std::to_string(next) + "에 볼 카드: 복습 " + std::to_string(c.due) +
         "장 + 새 카드 " + std::to_string(c.box[0]) + "장\n";
    return s;
}

bool parse_line_key(std::string_view line, Action& out) {
    if (line.empty()) {
        out = Action::Flip;  // Enter
        return true;
    }
    if (line.find_first_not_of(' ') == std::string_view::npos) {
        out = Action::Flip;  // Space
        return true;
    }
    std::string w(trim(line));
    for (char& ch : w)
        if (ch >= 'A' && ch <= 'Z') ch = char(ch - 'A' + 'a');
    static const std::pair<const char*, Action> names[] = {
        {"space", Action::Flip},      {"enter", Action::Flip},      {"flip", Action::Flip},
        {"click", Action::Flip},      {"1", Action::Rate1},         {"2", Action::Rate2},
        {"3", Action::Rate3},         {"쉬움", Action::Rate1},      {"보통", Action::Rate2},
        {"어려움", Action::Rate3},    {"right", Action::Next},      {"next", Action::Next},
        {"n", Action::Next},          {"l", Action::Next},          {"left", Action::Prev},
        {"prev", Action::Prev},       {"p", Action::Prev},          {"h", Action::Prev},
        {"up", Action::ScrollUp},     {"k", Action::ScrollUp},      {"down", Action::ScrollDown},
        {"j", Action::ScrollDown},    {"q", Action::Quit},          {"quit", Action::Quit},
    };
    for (const auto& [name, action] : names)
        if (w == name) {
            out = action;
            return true;
        }
    return false;
}

Session::Session(const Deck& d, Progress p) : deck(d), progress(std::move(p)) {
    session = next_session(progress.session);
    plan = plan_session(deck, progress, session);
    int due = 0;
    for (int k = 0; k < plan.today; k++)
        if (progress.cards.count(deck.cards[size_t(plan.order[size_t(k)])].number)) due++;
    if (plan.today == 0)
        message = "오늘 복습할 카드가 없어요. 좌우 화살표로 둘러볼 수 있어요.";
    else
        message = "오늘 볼 카드 " + std::to_string(plan.today) + "장: 복습 " + std::to_string(due) +
                  "장, 새 카드 " + std::to_string(plan.today - due) + "장";
}

bool Session::done_today() const {
    for (int k = 0; k < plan.today; k++)
        if (!rated_now.count(deck.cards[size_t(plan.order[size_t(k)])].number)) return false;
    return true;
}

void Session::advance() {
    flipped = false;
    scroll = 0;
    auto open = [&](size_t k) {
        return int(k) < plan.today && !rated_now.count(deck.cards[size_t(plan.order[k])].number);
    };
    for (size_t k = pos + 1; k < plan.order.size(); k++)
        if (open(k)) {
            pos = k;
            return;
        }
    for (size_t k = 0; k < pos; k++)
        if (open(k)) {
            pos = k;
            return;
        }
    message += ". 오늘 볼 카드를 모두 마쳤어요! q로 끝내기";
    if (pos + 1 < plan.order.size()) pos++;
}

bool Session::apply(Action a) {
    switch (a) {
        case Action::Flip:
            flipped = !flipped;
            scroll = 0;
            message.clear();
            return false;
        case Action::Rate1:
        case Action::Rate2:
        case Action::Rate3: {
            if (!flipped) {
                message = "먼저 답을 확인하세요 (Space, Enter 또는 카드 클릭)";
                return false;
            }
            Rating r = a == Action::Rate1 ? Rating::Easy : a == Action::Rate2 ? Rating::Medium
                                                                              : Rating::Hard;
            int num = card().number;
            if (rated_now.count(num)) {
                auto [had, st] = before_[num];
                if (had)
                    progress.cards[num] = st;
                else
                    progress.cards.erase(num);
            } else {
                auto it = progress.cards.find(num);
                before_[num] = {it != progress.cards.end(),
                                it != progress.cards.end() ? it->second : CardState{}};
            }
            rate(progress, num, r, session);
            rated_now[num] = r;
            rated = int(rated_now.size());
            last_rated = num;
            const CardState& st = progress.cards[num];
            message = std::to_string(num) + "번 카드: " + rating_name(r) + ", 상자 " +
                      std::to_string(st.box) + " (" +
                      (st.box == 1 ? std::string("다음 세션에 다시")
                                   : std::to_string(interval(st.box)) + "세션 뒤에 다시") +
                      ")";
            advance();
            return true;
        }
        case Action::Next:
            if (pos + 1 < plan.order.size()) {
                pos++;
                flipped = false;
                scroll = 0;
                message.clear();
            } else {
                message = "마지막 카드예요";
            }
            return false;
        case Action::Prev:
            if (pos > 0) {
                pos--;
                flipped = false;
                scroll = 0;
                message.clear();
            } else {
                message = "첫 카드예요";
            }
            return false;
        case Action::ScrollUp:
            scroll = std::max(0, scroll - 1);
            return false;
        case Action::ScrollDown:
            scroll++;  // render() clamps it to what the card has
            return false;
        case Action::None:
        case Action::Quit:
            return false;
    }
    return false;
}

}  // namespace cards
